/// A Redis Cluster redirect (sans-IO): the error reply a node sends for a key whose slot
/// it does not serve.
///
/// - `MOVED <slot> <host>:<port>`: the slot lives on that node now; ask it from now on.
/// - `ASK <slot> <host>:<port>`: the slot is being migrated and this key is already
///   there; send `ASKING` and then the command to that node, this once, and keep asking
///   the old owner otherwise.
///
/// The address is split at its last colon, so an IPv6 host without brackets (as Redis
/// writes it) reads too. An empty host (`:6380`) means the node that sent the redirect,
/// which does not know its own address: `host` is nil then. Anything else that is not
/// exactly this (a name instead of an IP address, a slot out of range, a bad port) is not
/// a redirect: the caller gets the error as it came.
public struct RedisRedirect: Sendable, Equatable {
    public enum Kind: Sendable, Equatable {
        case moved
        case ask
    }

    public var kind: Kind
    public var slot: Int
    /// Nil: the node that sent the redirect.
    public var host: String?
    public var port: Int

    public init(kind: Kind, slot: Int, host: String?, port: Int) {
        self.kind = kind
        self.slot = slot
        self.host = host
        self.port = port
    }

    /// The redirect in `reply`, or nil when it is not one.
    public init?(_ reply: RedisReply) {
        guard case .error(let message) = reply else { return nil }
        self.init(message: message)
    }

    /// The redirect in an error reply's text (without the leading `-`), or nil.
    public init?(message: String) {
        let words = message.split(separator: " ", omittingEmptySubsequences: false)
        guard words.count == 3 else { return nil }
        switch words[0] {
        case "MOVED": kind = .moved
        case "ASK": kind = .ask
        default: return nil
        }
        guard let slot = Self.number(words[1], upTo: RedisClusterSlot.count - 1) else { return nil }
        let address = words[2]
        guard let colon = address.lastIndex(of: ":"),
              let port = Self.number(address[address.index(after: colon)...], upTo: 65535), port >= 1 else { return nil }
        let host = String(address[..<colon])
        guard host.isEmpty || RedisEndpoint.isIPAddress(host) else { return nil }
        self.slot = slot
        self.host = host.isEmpty ? nil : host
        self.port = port
    }

    /// Where to go, `sender` standing in for an empty host.
    public func address(sender: RedisClusterAddress) -> RedisClusterAddress {
        RedisClusterAddress(host: host ?? sender.host, port: port)
    }

    /// A decimal of 1 to 5 ASCII digits no greater than `limit` (no sign, no overflow).
    private static func number(_ text: Substring, upTo limit: Int) -> Int? {
        guard !text.isEmpty, text.utf8.count <= 5 else { return nil }
        var value = 0
        for byte in text.utf8 {
            guard byte >= UInt8(ascii: "0"), byte <= UInt8(ascii: "9") else { return nil }
            value = value * 10 + Int(byte - UInt8(ascii: "0"))
        }
        return value <= limit ? value : nil
    }
}
