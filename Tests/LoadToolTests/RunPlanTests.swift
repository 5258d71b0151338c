import Testing
@testable import chat_loadtest

@Suite struct RunPlanTests {
    /// Several `--url`: member i connects to node i mod N (the cluster runs spread evenly).
    @Test func membersGoToTheNodesRoundRobin() throws {
        let nodes = try ["ws://127.0.0.1:9101", "ws://127.0.0.1:9102", "ws://127.0.0.1:9103"].map {
            try GatewayAddress(url: $0, forceTLS: false)
        }
        let plan = RunPlan(addresses: nodes, tls: nil, channelIDs: ["c"], groupSize: 7, members: 7, publishers: 7, textSize: 64)
        #expect((0..<7).map { plan.address(of: $0).port } == [9101, 9102, 9103, 9101, 9102, 9103, 9101])
    }
}
