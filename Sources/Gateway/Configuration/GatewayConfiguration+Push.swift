extension GatewayConfiguration {
    /// Where push-notification events go (PROTOCOL.md §9).
    public struct Push: Sendable, Equatable {
        public enum Sink: String, Sendable, Equatable, CaseIterable {
            case none
            case file
            case webhook
        }

        public var sink: Sink
        /// JSON Lines file; required when `sink` is `.file`.
        public var file: String?
        /// HTTP(S) URL for POST; required when `sink` is `.webhook`.
        public var webhookUrl: String?

        public init(sink: Sink = .none, file: String? = nil, webhookUrl: String? = nil) {
            self.sink = sink
            self.file = file
            self.webhookUrl = webhookUrl
        }
    }
}
