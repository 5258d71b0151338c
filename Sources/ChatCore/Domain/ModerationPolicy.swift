/// PROTOCOL.md §16: who may moderate a channel and who may send in it. Pure decisions,
/// table-tested; the engine asks them with the channel as committed.
public enum ModerationPolicy {
    /// Who asks: the app's backend (admin API) or a member with its role in the channel.
    public enum Actor: Sendable, Equatable {
        case backend
        case member(ChannelRole)
    }

    /// `channel.setRole`: the backend names any role; an owner names moderators and members,
    /// but never changes another owner (nor itself: a channel keeps its owner).
    public static func maySetRole(_ actor: Actor, target: ChannelRole, to role: ChannelRole) -> Bool {
        switch actor {
        case .backend: return true
        case .member(let own): return own == .owner && target != .owner && role != .owner
        }
    }

    /// Freeze, slow mode, bans: owners and moderators (and the backend).
    public static func mayModerate(_ actor: Actor) -> Bool {
        switch actor {
        case .backend: return true
        case .member(let role): return role.moderates
        }
    }

    /// `channel.ban` / `channel.unban` of a user with role `target`: a moderator bans
    /// members only; an owner also moderators; nobody but the backend an owner.
    public static func mayBan(_ actor: Actor, target: ChannelRole) -> Bool {
        switch actor {
        case .backend: return true
        case .member(.owner): return target != .owner
        case .member(.moderator): return target == .member
        case .member(.member): return false
        }
    }

    /// Why a member with `role` may not send now, if it may not: a frozen channel takes
    /// messages from owners and moderators only; slow mode lets others send once per
    /// `slowModeSeconds` (`lastSentAt`: its last accepted send in the channel).
    public static func sendRefusal(role: ChannelRole, frozen: Bool, slowModeSeconds: Int, lastSentAt: Milliseconds?,
                                   now: Milliseconds) -> ChatError? {
        guard !role.moderates else { return nil }
        if frozen { return ChatError(.channelFrozen, "the channel is frozen") }
        if slowModeSeconds > 0, let lastSentAt {
            let next = lastSentAt + Milliseconds(slowModeSeconds) * 1000
            if now < next {
                return ChatError(.slowMode, "slow mode: one message per \(slowModeSeconds) s; retry in \(next - now) ms",
                                 retryAfterMs: next - now)
            }
        }
        return nil
    }
}
