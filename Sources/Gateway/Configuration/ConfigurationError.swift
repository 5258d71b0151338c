/// Why the configuration cannot be used. Each description is one line that
/// names the key (or file, or environment variable) and the problem, so the
/// CLI can print it and exit with code 2.
public enum ConfigurationError: Error, Equatable, CustomStringConvertible {
    /// The configuration file could not be read.
    case unreadableFile(path: String, reason: String)
    /// The configuration file is not a JSON object.
    case invalidJSON(path: String, reason: String)
    /// The file holds a key that PROTOCOL.md §12 does not define.
    case unknownKey(key: String, file: String)
    /// A `CHAT_GATEWAY_*` variable that matches no key.
    case unknownEnvironmentVariable(name: String)
    /// A value of the wrong JSON type, or an environment value that does not parse.
    /// `source` is the file path or the environment variable name.
    case wrongType(key: String, expected: String, source: String)
    /// A value of the right type that is out of range or not one of the allowed words.
    case invalidValue(key: String, problem: String)
    /// A key that another key's value makes mandatory.
    case missingValue(key: String, reason: String)
    /// A key naming a file that does not exist.
    case fileNotFound(key: String, path: String)

    /// The configuration key the error is about, when there is one.
    public var key: String? {
        switch self {
        case .unreadableFile, .invalidJSON, .unknownEnvironmentVariable:
            nil
        case .unknownKey(let key, _), .wrongType(let key, _, _), .invalidValue(let key, _),
            .missingValue(let key, _), .fileNotFound(let key, _):
            key
        }
    }

    public var description: String {
        let line: String
        switch self {
        case .unreadableFile(let path, let reason):
            line = "cannot read configuration file \(path): \(reason)"
        case .invalidJSON(let path, let reason):
            line = "configuration file \(path) is not valid JSON: \(reason)"
        case .unknownKey(let key, let file):
            line = "unknown configuration key \"\(key)\" in \(file)"
        case .unknownEnvironmentVariable(let name):
            line = "unknown environment variable \(name): it matches no configuration key"
        case .wrongType(let key, let expected, let source):
            line = "\(key): expected \(expected) (from \(source))"
        case .invalidValue(let key, let problem):
            line = "\(key): \(problem)"
        case .missingValue(let key, let reason):
            line = "\(key): missing, \(reason)"
        case .fileNotFound(let key, let path):
            line = "\(key): file \"\(path)\" does not exist"
        }
        return line.split(whereSeparator: \.isNewline).joined(separator: " ")
    }
}
