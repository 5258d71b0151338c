import ChatCore
import Logging

extension ChatService {
    /// Writes a line the engine asked for. A line about a session gets its connection's `conn`,
    /// the id every `connection.*` line of that connection carries: it is read on the session's
    /// own loop, where the session lives, and the line is written there.
    func log(_ level: LogLevel, _ event: String, _ fields: [String: LogField], session: SessionID?) {
        let metadata = fields.mapValues { field -> Logger.MetadataValue in
            switch field {
            case .text(let text): .string(text)
            case .number(let number): .stringConvertible(number)
            }
        }
        let logger = logger
        let write: @Sendable (Logger.Metadata) -> Void = { metadata in
            switch level {
            case .info: logger.info("\(event)", metadata: metadata)
            case .notice: logger.notice("\(event)", metadata: metadata)
            case .warning: logger.warning("\(event)", metadata: metadata)
            }
        }
        guard let session, let shard = shard(at: SessionAddress(session).loopIndex) else { return write(metadata) }
        shard.loop.execute {
            var metadata = metadata
            if let connection = shard.session(session)?.socket?.socket.id {
                metadata["conn"] = .stringConvertible(connection)
            }
            write(metadata)
        }
    }
}
