/// Negotiated permessage-deflate parameters (RFC 7692 §7.1).
public struct DeflateParameters: Equatable, Sendable {
    /// The server resets its compressor after every message; always set by this
    /// server so one compressed frame can be shared by many connections.
    public var serverNoContextTakeover: Bool = true
    public var clientNoContextTakeover: Bool = false
    /// LZ77 window of the server's compressor, 9–15.
    public var serverMaxWindowBits: Int = 15
    /// Window the client promised to stay within; the server inflates with 15 regardless.
    public var clientMaxWindowBits: Int = 15

    public init(
        serverNoContextTakeover: Bool = true, clientNoContextTakeover: Bool = false,
        serverMaxWindowBits: Int = 15, clientMaxWindowBits: Int = 15
    ) {
        self.serverNoContextTakeover = serverNoContextTakeover
        self.clientNoContextTakeover = clientNoContextTakeover
        self.serverMaxWindowBits = serverMaxWindowBits
        self.clientMaxWindowBits = clientMaxWindowBits
    }

    /// The `Sec-WebSocket-Extensions` value a server answers with.
    public var responseHeaderValue: String {
        var value = "permessage-deflate"
        if serverNoContextTakeover { value += "; server_no_context_takeover" }
        if clientNoContextTakeover { value += "; client_no_context_takeover" }
        if serverMaxWindowBits != 15 { value += "; server_max_window_bits=\(serverMaxWindowBits)" }
        return value
    }

    /// Picks the first acceptable permessage-deflate offer from the values of every
    /// `Sec-WebSocket-Extensions` header, or nil when there is none to accept.
    public static func negotiate(offers headerValues: [String]) -> DeflateParameters? {
        for offer in ExtensionOffer.parse(headerValues) where offer.name == "permessage-deflate" {
            if let accepted = accept(offer) { return accepted }
        }
        return nil
    }

    private static func accept(_ offer: ExtensionOffer) -> DeflateParameters? {
        var result = DeflateParameters()
        var seen = Set<String>()
        for (name, value) in offer.parameters {
            guard seen.insert(name).inserted else { return nil }
            switch name {
            case "server_no_context_takeover":
                guard value == nil else { return nil }
            case "client_no_context_takeover":
                guard value == nil else { return nil }
                result.clientNoContextTakeover = true
            case "server_max_window_bits":
                // zlib cannot compress with a 256-byte window, so an offer of 8 is declined.
                guard let bits = value.flatMap(windowBits), bits >= 9 else { return nil }
                result.serverMaxWindowBits = bits
            case "client_max_window_bits":
                if let value {
                    guard let bits = windowBits(value) else { return nil }
                    result.clientMaxWindowBits = bits
                }
            default:
                return nil
            }
        }
        return result
    }

    private static func windowBits(_ text: String) -> Int? {
        guard !text.isEmpty, text.count <= 2, text.allSatisfy({ $0.isASCII && $0.isNumber }),
              !text.hasPrefix("0"), let bits = Int(text), (8...15).contains(bits) else { return nil }
        return bits
    }

    /// The offer a client sends.
    public static let clientOfferHeaderValue = "permessage-deflate; client_max_window_bits"

    /// Reads a server's answer to `clientOfferHeaderValue`; nil when it is not acceptable.
    public static func clientAccept(response headerValues: [String]) -> DeflateParameters? {
        let offers = ExtensionOffer.parse(headerValues)
        guard offers.count == 1, let answer = offers.first, answer.name == "permessage-deflate" else { return nil }
        var result = DeflateParameters(serverNoContextTakeover: false)
        for (name, value) in answer.parameters {
            switch name {
            case "server_no_context_takeover": result.serverNoContextTakeover = true
            case "client_no_context_takeover": result.clientNoContextTakeover = true
            case "server_max_window_bits":
                guard let bits = value.flatMap(windowBits) else { return nil }
                result.serverMaxWindowBits = bits
            case "client_max_window_bits":
                guard let bits = value.flatMap(windowBits), bits >= 9 else { return nil }
                result.clientMaxWindowBits = bits
            default: return nil
            }
        }
        return result
    }
}

/// One extension of a `Sec-WebSocket-Extensions` list (RFC 6455 §9.1).
struct ExtensionOffer: Equatable {
    var name: String
    var parameters: [(String, String?)]

    static func == (lhs: ExtensionOffer, rhs: ExtensionOffer) -> Bool {
        lhs.name == rhs.name && lhs.parameters.elementsEqual(rhs.parameters, by: { $0.0 == $1.0 && $0.1 == $1.1 })
    }

    static func parse(_ headerValues: [String]) -> [ExtensionOffer] {
        var offers: [ExtensionOffer] = []
        for value in headerValues {
            for item in value.split(separator: ",") {
                let parts = item.split(separator: ";").map { $0.trimmingASCIISpaces() }
                guard let name = parts.first, !name.isEmpty else { continue }
                var parameters: [(String, String?)] = []
                for part in parts.dropFirst() where !part.isEmpty {
                    if let eq = part.firstIndex(of: "=") {
                        var value = part[part.index(after: eq)...].trimmingASCIISpaces()
                        if value.count >= 2, value.hasPrefix("\""), value.hasSuffix("\"") {
                            value = String(value.dropFirst().dropLast())
                        }
                        parameters.append((part[..<eq].trimmingASCIISpaces().lowercased(), value))
                    } else {
                        parameters.append((part.lowercased(), nil))
                    }
                }
                offers.append(ExtensionOffer(name: name.lowercased(), parameters: parameters))
            }
        }
        return offers
    }
}

extension StringProtocol {
    func trimmingASCIISpaces() -> String {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let start = firstIndex(where: { !isSpace($0) }) else { return "" }
        let end = lastIndex(where: { !isSpace($0) }) ?? start
        return String(self[start...end])
    }
}
