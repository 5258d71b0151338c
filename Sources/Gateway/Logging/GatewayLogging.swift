import Logging

/// Process-wide logging set-up.
public enum GatewayLogging {
    /// Routes every `Logger` to a `JSONLogHandler` at `level`. swift-log allows
    /// one bootstrap per process (a second call traps): call it once, from main,
    /// after loading the configuration.
    public static func bootstrap(
        level: Logger.Level,
        sink: @escaping JSONLogHandler.Sink = FileDescriptorLogSink.standardOutput.write
    ) {
        LoggingSystem.bootstrap(
            { label, metadataProvider in
                JSONLogHandler(label: label, level: level, metadataProvider: metadataProvider, sink: sink)
            },
            metadataProvider: nil
        )
    }
}
