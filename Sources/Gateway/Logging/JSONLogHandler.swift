import Logging

/// A swift-log handler that writes one JSON object per line:
/// `{"ts":…,"level":…,"event":…,"label":…, <metadata…>}`. The log message is
/// the event name (`logger.info("connection.open", metadata: [...])`).
public struct JSONLogHandler: LogHandler {
    /// Receives each rendered line, without the trailing newline. Called
    /// concurrently from any thread.
    public typealias Sink = @Sendable (_ line: String) -> Void

    public var logLevel: Logger.Level
    public var metadata: Logger.Metadata = [:]
    public var metadataProvider: Logger.MetadataProvider?

    private let label: String
    private let sink: Sink

    public init(
        label: String,
        level: Logger.Level = .info,
        metadataProvider: Logger.MetadataProvider? = nil,
        sink: @escaping Sink = FileDescriptorLogSink.standardOutput.write
    ) {
        self.label = label
        self.logLevel = level
        self.metadataProvider = metadataProvider
        self.sink = sink
    }

    public subscript(metadataKey key: String) -> Logger.Metadata.Value? {
        get { metadata[key] }
        set { metadata[key] = newValue }
    }

    public func log(event: LogEvent) {
        var merged = metadata
        if let provided = metadataProvider?.get(), !provided.isEmpty {
            merged.merge(provided) { _, new in new }
        }
        if let eventMetadata = event.metadata, !eventMetadata.isEmpty {
            merged.merge(eventMetadata) { _, new in new }
        }
        let line = JSONLogLine.render(
            timestamp: JSONLogTimestamp.now(),
            level: event.level,
            event: event.message.description,
            label: label,
            error: event.error.map { String(describing: $0) },
            metadata: merged
        )
        sink(line)
    }
}
