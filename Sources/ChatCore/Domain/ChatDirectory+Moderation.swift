/// §16 changes to a channel, planned without changing anything (the engine writes the
/// channel they return and installs it when the write commits). `actor` nil is the app's
/// backend.
extension ChatDirectory {
    /// The channel a moderation request acts on, and who asks as `ModerationPolicy` sees it:
    /// a client must be in the channel; the backend may act on any.
    func moderated(_ id: ChannelID, by actor: UserID?) throws(ChatError) -> (Channel, ModerationPolicy.Actor) {
        guard let actor else {
            guard let channel = channels[id] else { throw ChatError(.channelNotFound, "no channel \(id)") }
            return (channel, .backend)
        }
        let channel = try memberChannel(id, of: actor)
        return (channel, .member(channel.role(of: actor)))
    }

    /// `frozen` and `slowModeSeconds` of `channel.update`: owners and moderators.
    public func planSettings(_ channel: Channel, by actor: UserID?, frozen: Bool?, slowModeSeconds: Int?) throws(ChatError) -> Channel {
        let who: ModerationPolicy.Actor = actor.map { .member(channel.role(of: $0)) } ?? .backend
        guard ModerationPolicy.mayModerate(who) else {
            throw ChatError(.forbidden, "only owners and moderators may freeze a channel or set slow mode")
        }
        var changed = channel
        if let frozen { changed.frozen = frozen }
        if let slowModeSeconds { changed.slowModeSeconds = slowModeSeconds }
        return changed
    }

    /// `channel.setRole`.
    public func planSetRole(_ id: ChannelID, user target: UserID, role: ChannelRole, by actor: UserID?) throws(ChatError) -> Channel {
        var (channel, who) = try moderated(id, by: actor)
        guard users[target] != nil else { throw ChatError(.userNotFound, "no user \(target)") }
        guard ModerationPolicy.maySetRole(who, target: channel.role(of: target), to: role) else {
            throw ChatError(.forbidden, "only an owner names moderators, and no owner is changed by another")
        }
        let implied: ChannelRole = !channel.createdBy.isEmpty && target == channel.createdBy ? .owner : .member
        channel.roles[target] = role == implied ? nil : role
        return channel
    }

    /// `channel.ban`: a plain ban also takes the user out of the channel.
    public func planBan(_ id: ChannelID, user target: UserID, ban: Ban, by actor: UserID?) throws(ChatError)
        -> (channel: Channel, removed: [UserID])
    {
        var (channel, who) = try moderated(id, by: actor)
        guard users[target] != nil else { throw ChatError(.userNotFound, "no user \(target)") }
        guard target != actor else { throw ChatError(.forbidden, "a user cannot ban itself") }
        guard ModerationPolicy.mayBan(who, target: channel.role(of: target)) else {
            throw ChatError(.forbidden, "moderators ban members; owners also moderators")
        }
        channel.bans[target] = ban
        guard !ban.shadow, channel.members.contains(target) else { return (channel, []) }
        channel.members.removeAll { $0 == target }
        channel.inviterViews[target] = nil
        for (viewer, view) in channel.inviterViews { channel.inviterViews[viewer] = view.filter { $0 != target } }
        channel.mutes[target] = nil
        return (channel, [target])
    }

    /// `channel.unban`: the user may join or be invited again; a shadow-banned member is heard again.
    public func planUnban(_ id: ChannelID, user target: UserID, by actor: UserID?) throws(ChatError) -> Channel {
        var (channel, who) = try moderated(id, by: actor)
        guard users[target] != nil else { throw ChatError(.userNotFound, "no user \(target)") }
        guard ModerationPolicy.mayBan(who, target: channel.role(of: target)) else {
            throw ChatError(.forbidden, "moderators unban members; owners also moderators")
        }
        channel.bans[target] = nil
        return channel
    }

    /// `channel.mute` / `channel.unmute` (nil) by a member, for itself.
    public func planMute(_ id: ChannelID, by user: UserID, mute: ChannelMute?) throws(ChatError) -> Channel {
        var channel = try memberChannel(id, of: user)
        channel.mutes[user] = mute
        return channel
    }

    /// Those who see a channel's bans: its owners and moderators among its members.
    public func moderators(of channel: Channel) -> [UserID] {
        channel.members.filter { channel.role(of: $0).moderates }
    }
}
