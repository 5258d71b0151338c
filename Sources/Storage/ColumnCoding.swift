import ChatCore
import Foundation

/// How the columns that hold more than one value are written, the same in every backend:
/// a user's metadata as a JSON object of strings, a channel's inviter views as
/// `inviter=member,member;…` (user ids never hold `=`, `,` or `;`).
public enum ColumnCoding {
    /// `Channel.inviterViews` as stored: `inviter=member,member;…`.
    public static func encodeInviterViews(_ views: [UserID: [UserID]]) -> String {
        views.sorted { $0.key < $1.key }.map { $0.key + "=" + $0.value.joined(separator: ",") }.joined(separator: ";")
    }

    public static func decodeInviterViews(_ text: String) -> [UserID: [UserID]] {
        var views: [UserID: [UserID]] = [:]
        for entry in text.split(separator: ";") {
            let parts = entry.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            guard parts.count == 2 else { continue }
            views[String(parts[0])] = parts[1].split(separator: ",").map(String.init)
        }
        return views
    }


    public static func encodeMetadata(_ metadata: [String: String]) throws(StoreError) -> String {
        if metadata.isEmpty { return "{}" }
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        do {
            return String(decoding: try encoder.encode(metadata), as: UTF8.self)
        } catch {
            throw StoreError("cannot encode user metadata: \(error)")
        }
    }

    public static func decodeMetadata(_ json: String, userID: UserID) throws(StoreError) -> [String: String] {
        if json == "{}" || json.isEmpty { return [:] }
        do {
            return try JSONDecoder().decode([String: String].self, from: Data(json.utf8))
        } catch {
            throw StoreError("user \(userID) has invalid metadata JSON: \(error)")
        }
    }
}
