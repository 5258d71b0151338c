import Foundation

// docs/clients.md's first app against a running gateway:
//   CHAT_URL=ws://127.0.0.1:8080/v1/ws CHAT_TOKEN=… FRIEND=bob chat-client-example
let environment = ProcessInfo.processInfo.environment
let url = environment["CHAT_URL"] ?? "ws://127.0.0.1:8080/v1/ws"
let friend = environment["FRIEND"] ?? "bob"
guard let token = environment["CHAT_TOKEN"] else {
    FileHandle.standardError.write(Data("set CHAT_TOKEN (chat-gateway token --user alice)\n".utf8))
    exit(2)
}
try await FirstApp.run(url: url, friend: friend, token: { token })
