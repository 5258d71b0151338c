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

    /// A message's `mentionedUserIds`: a JSON array of strings.
    public static func encodeList(_ values: [String]) -> String {
        if values.isEmpty { return "[]" }
        var w = JSONWriter()
        w.beginArray()
        for value in values { w.string(value) }
        w.endArray()
        return String(decoding: w.bytes, as: UTF8.self)
    }

    /// Lenient: a column this gateway wrote; anything else reads as empty.
    public static func decodeList(_ json: String) -> [String] {
        guard json != "[]", !json.isEmpty, let array = try? JSONParser.parse(Array(json.utf8)).arrayValue else { return [] }
        return array.compactMap(\.stringValue)
    }

    /// A message's reaction counts per kind: a JSON object of integers.
    public static func encodeCounts(_ counts: [String: Int]) -> String {
        if counts.isEmpty { return "{}" }
        var w = JSONWriter()
        w.beginObject()
        for (kind, count) in counts.sorted(by: { $0.key < $1.key }) {
            w.key(kind); w.int(Int64(count))
        }
        w.endObject()
        return String(decoding: w.bytes, as: UTF8.self)
    }

    /// Lenient, like `decodeList`.
    public static func decodeCounts(_ json: String) -> [String: Int] {
        guard json != "{}", !json.isEmpty, let object = try? JSONParser.parse(Array(json.utf8)).objectValue else { return [:] }
        var counts: [String: Int] = [:]
        for (kind, value) in object.entries {
            if let count = value.int64Value, count > 0, count <= Int64(Int32.max) { counts[kind] = Int(count) }
        }
        return counts
    }
}
