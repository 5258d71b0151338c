import ChatCore

/// The part of a user's Redis keys that decides their hash slot on a Redis Cluster
/// (`{<user>}`): all of one user's keys share a slot, so a script may take several of
/// them, and different users spread over the masters.
enum UserHashTag {
    static func of(_ user: UserID) -> String { "{" + user + "}" }
}
