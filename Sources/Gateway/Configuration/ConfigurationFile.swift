import Foundation

/// A configuration file read and checked against the known keys: every key
/// must be one of PROTOCOL.md §12 and hold a value of the key's type. A key
/// named `$comment` (at any level) is ignored, so files can carry notes.
struct ConfigurationFile {
    static let commentKey = "$comment"

    let path: String
    let contents: Data
    /// Paths of the known keys the file sets (to a non-null value).
    let setKeys: Set<String>

    init(path: String) throws(ConfigurationError) {
        let contents: Data
        do {
            contents = try Data(contentsOf: URL(fileURLWithPath: path))
        } catch {
            throw .unreadableFile(path: path, reason: Self.reason(error))
        }
        try self.init(path: path, contents: contents)
    }

    init(path: String, contents: Data) throws(ConfigurationError) {
        let parsed: Any
        do {
            parsed = try JSONSerialization.jsonObject(with: contents)
        } catch {
            throw .invalidJSON(path: path, reason: Self.reason(error))
        }
        guard let object = parsed as? [String: Any] else {
            throw .invalidJSON(path: path, reason: "the top-level value must be an object")
        }
        var setKeys: Set<String> = []
        try Self.check(object, prefix: "", file: path, setKeys: &setKeys)
        self.path = path
        self.contents = contents
        self.setKeys = setKeys
    }

    private static func check(
        _ object: [String: Any],
        prefix: String,
        file: String,
        setKeys: inout Set<String>
    ) throws(ConfigurationError) {
        // Sorted so that the first error reported does not depend on hash order.
        for (name, value) in object.sorted(by: { $0.key < $1.key }) where name != commentKey {
            let path = prefix.isEmpty ? name : "\(prefix).\(name)"
            if let key = ConfigurationKey.byPath[path] {
                if value is NSNull { continue }
                guard JSONValueType.matches(value, key.kind) else {
                    throw .wrongType(key: path, expected: key.kind.expectation, source: file)
                }
                setKeys.insert(path)
            } else if ConfigurationKey.sections.contains(path) {
                guard let nested = value as? [String: Any] else {
                    throw .wrongType(key: path, expected: "an object", source: file)
                }
                try check(nested, prefix: path, file: file, setKeys: &setKeys)
            } else {
                throw .unknownKey(key: path, file: file)
            }
        }
    }

    private static func reason(_ error: any Error) -> String {
        let nsError = error as NSError
        if let underlying = nsError.userInfo[NSDebugDescriptionErrorKey] as? String {
            return underlying
        }
        return nsError.localizedDescription
    }
}

/// Strict JSON type checks on JSONSerialization output, where booleans and
/// numbers are both NSNumber.
enum JSONValueType {
    static func matches(_ value: Any, _ kind: ConfigurationKey.Kind) -> Bool {
        switch kind {
        case .string:
            return value is String
        case .boolean:
            return isBoolean(value)
        case .integer:
            return isInteger(value)
        case .stringArray:
            guard let array = value as? [Any] else { return false }
            return array.allSatisfy { $0 is String }
        }
    }

    private static func isBoolean(_ value: Any) -> Bool {
        guard !(value is String), let number = value as? NSNumber else { return false }
        return String(cString: number.objCType) == "c"
    }

    private static func isInteger(_ value: Any) -> Bool {
        guard !(value is String), let number = value as? NSNumber, !isBoolean(value) else { return false }
        switch String(cString: number.objCType) {
        case "d", "f":
            // 1e3 is an integer; 1.5 is not.
            let double = number.doubleValue
            return double.rounded() == double && Int(exactly: double) != nil
        default:
            return true
        }
    }
}
