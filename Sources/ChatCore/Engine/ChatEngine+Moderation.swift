extension ChatEngine {
    /// §16: `slowModeSeconds` runs from 0 (off) to an hour.
    public static let maxSlowModeSeconds = 3600
}
