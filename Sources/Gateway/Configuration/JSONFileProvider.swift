import Configuration
import Foundation

/// A `ConfigProvider` over the bytes of a JSON configuration file, parsed by
/// swift-configuration's `JSONSnapshot` exactly as `FileProvider<JSONSnapshot>`
/// does. `FileProvider`'s initializer is async and reads the file itself; this
/// one is synchronous and takes the bytes `ConfigurationFile` already read and
/// checked, so loading stays synchronous and the file is read once.
/// (swift-configuration is built with NonisolatedNonsendingByDefault, hence
/// the explicit `nonisolated(nonsending)` on the async requirements.)
struct JSONFileProvider: ConfigProvider {
    private let jsonSnapshot: JSONSnapshot

    init(file: ConfigurationFile) throws(ConfigurationError) {
        do {
            jsonSnapshot = try JSONSnapshot(
                data: file.contents.bytes,
                providerName: "JSONFileProvider[\(file.path)]",
                parsingOptions: .default
            )
        } catch {
            throw .invalidJSON(path: file.path, reason: "\(error)")
        }
    }

    var providerName: String { jsonSnapshot.providerName }

    func value(forKey key: AbsoluteConfigKey, type: ConfigType) throws -> LookupResult {
        try jsonSnapshot.value(forKey: key, type: type)
    }

    nonisolated(nonsending) func fetchValue(forKey key: AbsoluteConfigKey, type: ConfigType) async throws -> LookupResult {
        try value(forKey: key, type: type)
    }

    nonisolated(nonsending) func watchValue<Return: ~Copyable>(
        forKey key: AbsoluteConfigKey,
        type: ConfigType,
        updatesHandler: nonisolated(nonsending) (
            _ updates: ConfigUpdatesAsyncSequence<Result<LookupResult, any Error>, Never>
        ) async throws -> Return
    ) async throws -> Return {
        try await watchValueFromValue(forKey: key, type: type, updatesHandler: updatesHandler)
    }

    func snapshot() -> any ConfigSnapshot { jsonSnapshot }

    nonisolated(nonsending) func watchSnapshot<Return: ~Copyable>(
        updatesHandler: nonisolated(nonsending) (
            _ updates: ConfigUpdatesAsyncSequence<any ConfigSnapshot, Never>
        ) async throws -> Return
    ) async throws -> Return {
        try await watchSnapshotFromSnapshot(updatesHandler: updatesHandler)
    }
}
