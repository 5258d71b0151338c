import Foundation

/// The browser files under `clients/` that the gateway serves: the web console
/// (`console/`) and the JavaScript SDK it imports: the entry module `js/chat-client.js`
/// and the modules beside it in `js/chat-client/`.
///
/// SwiftPM copies them into a resource bundle, a folder named `bundleName` beside
/// the built binary (`.build/release/chat-gateway_ClientAssets.resources`). They are
/// found there directly rather than through `Bundle.module`, whose accessor stops
/// the process when the folder is missing: a binary copied elsewhere without it
/// still runs, and its console answers that the files are missing.
public enum ClientAssets {
    public static let bundleName = "chat-gateway_ClientAssets.resources"

    /// The resource folder beside the running executable, if it is there.
    public static var directory: URL? {
        let candidate = Bundle.main.bundleURL.appendingPathComponent(bundleName, isDirectory: true)
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: candidate.path, isDirectory: &isDirectory), isDirectory.boolValue else {
            return nil
        }
        return candidate
    }

    /// Every regular file of the resource folder by its path inside it
    /// (`console/index.html`, `chat-client.js`, `chat-client/client.js`); nil when the folder is missing.
    public static func load() -> [String: [UInt8]]? {
        guard let root = directory else { return nil }
        guard let enumerator = FileManager.default.enumerator(
            at: root, includingPropertiesForKeys: [.isRegularFileKey], options: [.skipsHiddenFiles]
        ) else { return nil }
        let prefix = root.standardizedFileURL.path + "/"
        var files: [String: [UInt8]] = [:]
        for case let url as URL in enumerator {
            guard (try? url.resourceValues(forKeys: [.isRegularFileKey]))?.isRegularFile == true,
                  let data = FileManager.default.contents(atPath: url.path) else { continue }
            let path = url.standardizedFileURL.path
            guard path.hasPrefix(prefix) else { continue }
            files[String(path.dropFirst(prefix.count))] = [UInt8](data)
        }
        return files
    }
}
