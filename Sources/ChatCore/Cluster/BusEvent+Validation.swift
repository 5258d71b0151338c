/// The checks a decoded bus event passes before any node applies it (`BusInputRules`).
extension BusEvent {
    /// The first field that breaks a rule, named for the log; nil when the event is sound.
    public var invalidField: String? {
        let rules = BusInputRules.self
        guard rules.isIdentifier(node) else { return "node" }
        switch write {
        case .upsertUser(let user):
            if let field = Self.invalidField(of: user) { return "user.\(field)" }
        case .setUserDeactivated(let id, _):
            guard rules.isUserID(id) else { return "userId" }
        case .createChannel(let channel), .updateChannel(let channel):
            if let field = Self.invalidField(of: channel) { return "channel.\(field)" }
        case .insertMessage(let message):
            // Before the store numbered it, a message's seq is 0.
            if let field = Self.invalidField(of: message, stored: false) { return "message.\(field)" }
        case .setBlock(let blocker, let blocked, _, let at):
            guard rules.isUserID(blocker) else { return "blocker" }
            guard rules.isUserID(blocked) else { return "blocked" }
            guard rules.isTime(at) else { return "at" }
        case .changeMessage(let change):
            guard rules.isIdentifier(change.channelID) else { return "change.channelId" }
            guard change.seq >= 1, rules.isSeq(change.seq) else { return "change.seq" }
            guard rules.isUserID(change.actor) else { return "change.actor" }
            guard rules.isTime(change.at) else { return "change.at" }
            switch change.action {
            case .edit(let text, let dataJSON, let mentions, let hideFrom):
                guard rules.isText(text), dataJSON.map(rules.isText) ?? true else { return "change.text" }
                guard mentions.count <= 25, mentions.allSatisfy(rules.isUserID) else { return "change.mentionedUserIds" }
                guard hideFrom.map({ $0 == Message.hiddenFromEveryone || rules.isUserID($0) }) ?? true else { return "change.hideFrom" }
            case .delete:
                break
            case .addReaction(let kind), .removeReaction(let kind):
                guard MessageChange.isReactionKind(kind) else { return "change.kind" }
            }
            guard case .changed(let stored, let previousVersion) = result, stored.version > previousVersion, previousVersion >= 0
            else { return "previousVersion" }
        case .markRead(let channelID, let userID, let seq):
            guard rules.isIdentifier(channelID) else { return "channelId" }
            guard rules.isUserID(userID) else { return "userId" }
            guard rules.isSeq(seq) else { return "seq" }
        case .insertFlag(let flag):
            guard rules.isIdentifier(flag.channelID) else { return "flag.channelId" }
            guard flag.seq >= 1, rules.isSeq(flag.seq) else { return "flag.seq" }
            guard rules.isIdentifier(flag.messageID) else { return "flag.messageId" }
            guard rules.isUserID(flag.reporterID) else { return "flag.reporterId" }
            guard rules.isUserID(flag.senderID) else { return "flag.senderId" }
            guard rules.isText(flag.reason) else { return "flag.reason" }
            guard rules.isTime(flag.createdAt) else { return "flag.createdAt" }
        }
        switch result {
        case .message(let stored), .changed(let stored, _):
            if let field = Self.invalidField(of: stored, stored: true) { return "stored.\(field)" }
        case .channel(let lastSeq):
            guard rules.isSeq(lastSeq) else { return "lastSeq" }
        default:
            break
        }
        return nil
    }

    private static func invalidField(of user: User) -> String? {
        let rules = BusInputRules.self
        guard rules.isUserID(user.id) else { return "id" }
        guard rules.isText(user.name) else { return "name" }
        guard rules.isText(user.image) else { return "image" }
        guard user.metadata.count <= rules.maxListCount,
              user.metadata.allSatisfy({ rules.isText($0.key) && rules.isText($0.value) }) else { return "metadata" }
        guard rules.isTime(user.createdAt) else { return "createdAt" }
        guard rules.isTime(user.lastSeenAt) else { return "lastSeenAt" }
        guard user.mutedUsers.count <= rules.maxListCount, user.mutedUsers.allSatisfy(rules.isUserID) else { return "mutedUsers" }
        guard user.ban.map(isSound) ?? true else { return "ban" }
        return nil
    }

    private static func invalidField(of channel: Channel) -> String? {
        let rules = BusInputRules.self
        guard rules.isIdentifier(channel.id) else { return "id" }
        guard rules.isText(channel.name) else { return "name" }
        guard channel.members.count <= rules.maxListCount, channel.members.allSatisfy(rules.isUserID) else { return "members" }
        guard rules.isTime(channel.createdAt) else { return "createdAt" }
        guard rules.isText(channel.createdBy) else { return "createdBy" }
        guard channel.inviterViews.count <= rules.maxListCount,
              channel.inviterViews.allSatisfy({ inviter, members in
                  rules.isUserID(inviter) && members.count <= rules.maxListCount && members.allSatisfy(rules.isUserID)
              }) else { return "inviterViews" }
        guard channel.roles.count <= rules.maxListCount, channel.roles.keys.allSatisfy(rules.isUserID) else { return "roles" }
        guard channel.slowModeSeconds >= 0, channel.slowModeSeconds <= ChatEngine.maxSlowModeSeconds else { return "slowModeSeconds" }
        guard channel.bans.count <= rules.maxListCount,
              channel.bans.allSatisfy({ rules.isUserID($0.key) && isSound($0.value) }) else { return "bans" }
        guard channel.mutes.count <= rules.maxListCount,
              channel.mutes.allSatisfy({ user, mute in rules.isUserID(user) && (mute.untilMs.map(rules.isTime) ?? true) })
        else { return "mutes" }
        return nil
    }

    private static func isSound(_ ban: Ban) -> Bool {
        ban.untilMs.map(BusInputRules.isTime) ?? true
    }

    private static func invalidField(of message: Message, stored: Bool) -> String? {
        let rules = BusInputRules.self
        guard rules.isIdentifier(message.id) else { return "id" }
        guard rules.isIdentifier(message.channelID) else { return "channelId" }
        guard message.seq >= (stored ? 1 : 0), rules.isSeq(message.seq) else { return "seq" }
        guard rules.isUserID(message.senderID) else { return "senderId" }
        guard rules.isText(message.text) else { return "text" }
        guard message.dataJSON.map(rules.isText) ?? true else { return "data" }
        guard message.clientMessageID.map({ $0.utf8.count <= rules.maxIdentifierBytes }) ?? true else { return "clientMessageId" }
        guard rules.isTime(message.createdAt) else { return "createdAt" }
        guard message.hiddenFrom.map({ $0.isEmpty || $0 == Message.hiddenFromEveryone || rules.isUserID($0) }) ?? true else { return "hiddenFrom" }
        guard message.parentSeq.map({ $0 >= 1 && rules.isSeq($0) }) ?? true else { return "parentSeq" }
        guard message.mentionedUserIDs.count <= 25, message.mentionedUserIDs.allSatisfy(rules.isUserID) else { return "mentionedUserIds" }
        guard message.version >= 0, rules.isSeq(message.version) else { return "version" }
        guard message.reactions.count <= MessageChange.maxReactionKinds,
              message.reactions.keys.allSatisfy(MessageChange.isReactionKind) else { return "reactions" }
        return nil
    }
}
