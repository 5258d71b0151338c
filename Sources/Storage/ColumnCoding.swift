import ChatCore
import Foundation

/// How the columns that hold more than one value are written, the same in every backend:
/// a user's metadata as a JSON object of strings, a channel's inviter views as
/// `inviter=member,member;…` (user ids never hold `=`, `,` or `;`), and the moderation
/// fields (§16) as JSON in the shape the bus carries them (`BusEvent`).
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

    // MARK: moderation (§16)

    /// `Channel.roles`: a JSON object of role names by user id, `{"alice":"moderator"}`.
    public static func encodeRoles(_ roles: [UserID: ChannelRole]) -> String {
        if roles.isEmpty { return "{}" }
        var w = JSONWriter()
        w.object(sortedBy: roles) { role, w in w.string(role.rawValue) }
        return String(decoding: w.bytes, as: UTF8.self)
    }

    /// Lenient, like `decodeList`: an entry that names no known role is left out.
    public static func decodeRoles(_ json: String) -> [UserID: ChannelRole] {
        var roles: [UserID: ChannelRole] = [:]
        for (user, value) in objectEntries(json) {
            if let role = value.stringValue.flatMap(ChannelRole.init(rawValue:)) { roles[user] = role }
        }
        return roles
    }

    /// `Channel.bans`: a JSON object of bans by user id, `{"bob":{"shadow":true,"untilMs":null}}`.
    public static func encodeBans(_ bans: [UserID: Ban]) -> String {
        if bans.isEmpty { return "{}" }
        var w = JSONWriter()
        w.object(sortedBy: bans) { ban, w in ban.write(to: &w) }
        return String(decoding: w.bytes, as: UTF8.self)
    }

    /// Lenient: an entry that is not an object is left out.
    public static func decodeBans(_ json: String) -> [UserID: Ban] {
        var bans: [UserID: Ban] = [:]
        for (user, value) in objectEntries(json) {
            if let object = value.objectValue { bans[user] = ban(object) }
        }
        return bans
    }

    /// `User.ban`: one ban object as in `encodeBans`; nil (SQL NULL) when there is none.
    public static func encodeBan(_ ban: Ban?) -> String? {
        guard let ban else { return nil }
        var w = JSONWriter()
        ban.write(to: &w)
        return String(decoding: w.bytes, as: UTF8.self)
    }

    /// Lenient: NULL, or anything but an object, reads as no ban.
    public static func decodeBan(_ json: String?) -> Ban? {
        guard let json, !json.isEmpty, let object = try? JSONParser.parse(Array(json.utf8)).objectValue else { return nil }
        return ban(object)
    }

    /// `Channel.mutes`: a JSON object of the mutes' ends by user id (null: until lifted),
    /// `{"alice":null,"bob":1700000000000}`.
    public static func encodeMutes(_ mutes: [UserID: ChannelMute]) -> String {
        if mutes.isEmpty { return "{}" }
        var w = JSONWriter()
        w.object(sortedBy: mutes) { mute, w in if let until = mute.untilMs { w.int(until) } else { w.null() } }
        return String(decoding: w.bytes, as: UTF8.self)
    }

    /// Lenient: an entry that is neither null nor an integer is left out.
    public static func decodeMutes(_ json: String) -> [UserID: ChannelMute] {
        var mutes: [UserID: ChannelMute] = [:]
        for (user, value) in objectEntries(json) {
            if case .null = value {
                mutes[user] = ChannelMute()
            } else if let until = value.int64Value {
                mutes[user] = ChannelMute(untilMs: until)
            }
        }
        return mutes
    }

    /// `User.mutedUsers`: a JSON array of user ids, sorted.
    public static func encodeUserSet(_ users: Set<UserID>) -> String {
        encodeList(users.sorted())
    }

    /// Lenient, like `decodeList`.
    public static func decodeUserSet(_ json: String) -> Set<UserID> {
        Set(decodeList(json))
    }

    /// A ban object whose `shadow` is missing or malformed is a plain ban, whose `untilMs` is
    /// missing or malformed lasts until lifted: a stored ban object never reads as no ban.
    private static func ban(_ object: JSONObject) -> Ban {
        Ban(shadow: object["shadow"]?.boolValue ?? false, untilMs: object["untilMs"]?.int64Value)
    }

    /// The entries of a JSON object column; none for `{}`, an empty or malformed one.
    private static func objectEntries(_ json: String) -> [(key: String, value: JSONValue)] {
        guard json != "{}", !json.isEmpty, let object = try? JSONParser.parse(Array(json.utf8)).objectValue else { return [] }
        return object.entries
    }
}
