import ArgumentParser

/// `room --lifecycle`: what each member does once a second besides the run's messages
/// (PROTOCOL.md §15), on the newest message of the tool it received.
enum LifecycleMix: String, Sendable, CaseIterable {
    /// Every member toggles its reaction (`reaction.add`, then `reaction.remove`): a reaction storm.
    case react
    /// Three seconds in five a reaction toggle, one an edit of the member's own newest
    /// message (a reaction when it has none), one a reply in the newest message's thread.
    case mix

    enum Action {
        case react
        case edit
        case reply
    }

    /// The action of a member's `tick`th second.
    func action(tick: Int) -> Action {
        switch self {
        case .react: return .react
        case .mix:
            switch tick % 5 {
            case 3: return .edit
            case 4: return .reply
            default: return .react
            }
        }
    }
}

extension LifecycleMix: ExpressibleByArgument {}
