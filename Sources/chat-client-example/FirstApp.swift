import ChatClient

/// The first app of docs/clients.md: connect, list channels, send, receive, block.
enum FirstApp {
    static func run(url: String, friend: String, token: @escaping @Sendable () async throws -> String,
                    say: @Sendable (String) -> Void = { print($0) }) async throws {
        let client = ChatClient(url: url, token: token)
        try await client.connect()

        // Channels, newest activity first, with what is unread in each.
        for channel in try await client.channels(limit: 20).items {
            say("\(channel.name): \(channel.unreadCount) unread")
        }

        // A 1-to-1 with a friend, and every message in it, once and in order (and, as
        // `.updated`, every later edit, delete or reply count of one of them).
        let chat = try await client.createChannel(userIDs: [friend], name: "first app", distinct: true)
        let messages = try await client.messages(in: chat.id)
        let sent = try await client.send("hello", to: chat.id)
        say("sent #\(sent.seq)")
        for await item in messages {
            guard case .new(let message) = item, message.senderId == friend else { continue }
            say("\(friend): \(message.text)")
            _ = try await client.markRead(chat.id, seq: message.seq)
            break
        }

        // Blocking, with a result per user (Sendbird's blockUser, CometChat's blockUsers).
        let results = try await client.block([friend])
        say("blocked \(friend): \(results[friend] == .success)")
        let blocked = client.blockedUsersQuery(direction: .blockedByMe, limit: 50)
        while let page = try await blocked.next() {
            say("blocked list: \(page.map(\.id))")
        }
        await client.disconnect()
    }
}
