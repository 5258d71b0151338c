import ChatCore

extension GatewayConfiguration {
    /// Blocking semantics (PROTOCOL.md §5).
    public struct Blocking: Sendable, Equatable {
        public typealias Mode = DeliveryPolicy.Mode

        public var mode: Mode
        /// Whether `direction: me|both` and `hasBlockedMe` are answered.
        public var revealBlockedBy: Bool
        public var excludeFromInvitations: Bool

        /// `revealBlockedBy` defaults by mode: false in standard, true in strict.
        public init(mode: Mode = .standard, revealBlockedBy: Bool? = nil, excludeFromInvitations: Bool = false) {
            self.mode = mode
            self.revealBlockedBy = revealBlockedBy ?? (mode == .strict)
            self.excludeFromInvitations = excludeFromInvitations
        }
    }
}
