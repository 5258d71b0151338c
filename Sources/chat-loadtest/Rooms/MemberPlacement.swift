import ArgumentParser

/// Which node of a cluster a member connects to (`--placement`): round-robin by member, which
/// puts every channel on every node, or by channel, which puts each channel on one node
/// (`channel`) or two neighbouring ones (`pair`: its even members on node c mod N, its odd
/// ones on the next), as a deployment that routes users by their channels would.
enum MemberPlacement: String, ExpressibleByArgument, CaseIterable, Sendable {
    case roundRobin = "member"
    case channel
    case pair

    /// The node index of `member` (members numbered 0…, `groupSize` to a channel, in order).
    func node(of member: Int, groupSize: Int, nodes: Int) -> Int {
        guard nodes > 1 else { return 0 }
        let channel = member / max(groupSize, 1)
        switch self {
        case .roundRobin: return member % nodes
        case .channel: return channel % nodes
        case .pair: return (channel + member % 2) % nodes
        }
    }
}
