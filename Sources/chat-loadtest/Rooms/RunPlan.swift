import EventLoop

/// What every connection of a run shares, fixed before the first connect.
///
/// Members are numbered 0…members-1 and split into channels of `groupSize` in order
/// (`room`: one channel of everyone; `rooms`: many small ones); publishers are the
/// members below `publishers`.
struct RunPlan: Sendable {
    /// The nodes member connections go to, round-robin by member index.
    var addresses: [GatewayAddress]
    var tls: TLSContext?
    var channelIDs: [String]
    var groupSize: Int
    var members: Int
    var publishers: Int
    var textSize: Int
    /// Offer permessage-deflate in every upgrade.
    var deflate = false
    /// Which node each member connects to.
    var placement = MemberPlacement.roundRobin
    /// Each frame goes out in its own system call when it is sent (`--write-each-frame`),
    /// not gathered with the connection's other frames of the loop turn.
    var writesEachFrame = false

    func channelID(of member: Int) -> String { channelIDs[member / groupSize] }

    func address(of member: Int) -> GatewayAddress {
        addresses[placement.node(of: member, groupSize: groupSize, nodes: addresses.count)]
    }

    /// Senders a member can hear from: the publishers of its own channel.
    var sendersPerChannel: Int { min(publishers, groupSize) }
}
