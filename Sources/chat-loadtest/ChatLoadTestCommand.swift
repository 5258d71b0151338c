import ArgumentParser

@main
struct ChatLoadTestCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "chat-loadtest",
        abstract: "Load tests for the chat gateway (PROTOCOL.md): fan-out throughput, loss and end-to-end latency.",
        subcommands: [RoomCommand.self, RoomsCommand.self, IdleCommand.self, HandshakesCommand.self, ChaosCommand.self, ClusterChaosCommand.self,
                      StormCommand.self])
}
