import Configuration

/// The swift-configuration provider chain the loader reads through:
/// `CHAT_GATEWAY_*` environment variables first, then the JSON file.
/// A key that neither sets reads as nil, so the caller keeps its default.
struct ConfigurationSources {
    private let reader: ConfigReader
    private let overrides: [String: String]
    private let file: ConfigurationFile?

    /// Fails on a `CHAT_GATEWAY_*` variable that matches no key; other
    /// variables are ignored.
    init(file: ConfigurationFile?, environment: [String: String]) throws(ConfigurationError) {
        var overrides: [String: String] = [:]
        for (name, value) in environment.sorted(by: { $0.key < $1.key })
        where name.hasPrefix(ConfigurationKey.environmentPrefix) {
            guard ConfigurationKey.byEnvironmentVariable[name] != nil else {
                throw .unknownEnvironmentVariable(name: name)
            }
            overrides[name] = value
        }
        let secretNames = Set(ConfigurationKey.all.filter(\.isSecret).map(\.environmentVariable))
        // The provider's own key encoding splits camel case (`jwtSecret` →
        // `JWT_SECRET`); lower-casing each component first yields the
        // protocol's `CHAT_GATEWAY_AUTH_JWTSECRET`.
        let environmentProvider = EnvironmentVariablesProvider(
            environmentVariables: overrides,
            secretsSpecifier: .specific(secretNames)
        ).mapKeys { key in
            AbsoluteConfigKey(["chat_gateway"] + key.components.map { $0.lowercased() }, context: key.context)
        }
        var providers: [any ConfigProvider] = [environmentProvider]
        if let file {
            providers.append(try JSONFileProvider(file: file))
        }
        self.reader = ConfigReader(providers: providers)
        self.overrides = overrides
        self.file = file
    }

    /// Empty strings read as nil, so an optional key can be unset from the environment.
    func optionalString(_ key: ConfigurationKey) throws(ConfigurationError) -> String? {
        guard let value = try string(key), !value.isEmpty else { return nil }
        return value
    }

    func string(_ key: ConfigurationKey) throws(ConfigurationError) -> String? {
        try read(key) { try reader.requiredString(forKey: $0, isSecret: key.isSecret) }
    }

    func int(_ key: ConfigurationKey) throws(ConfigurationError) -> Int? {
        try read(key) { try reader.requiredInt(forKey: $0, isSecret: key.isSecret) }
    }

    func bool(_ key: ConfigurationKey) throws(ConfigurationError) -> Bool? {
        try read(key) { try reader.requiredBool(forKey: $0, isSecret: key.isSecret) }
    }

    /// From the environment: comma-separated, blanks trimmed, empty items dropped.
    func stringArray(_ key: ConfigurationKey) throws(ConfigurationError) -> [String]? {
        try read(key) { try reader.requiredStringArray(forKey: $0, isSecret: key.isSecret) }?
            .filter { !$0.isEmpty }
    }

    /// A string that must be the raw value of one of `Choice`'s cases.
    func choice<Choice: RawRepresentable & CaseIterable>(
        _ key: ConfigurationKey,
        as: Choice.Type = Choice.self
    ) throws(ConfigurationError) -> Choice? where Choice.RawValue == String {
        guard let raw = try string(key) else { return nil }
        guard let value = Choice(rawValue: raw) else {
            let allowed = Choice.allCases.map(\.rawValue).joined(separator: ", ")
            throw .invalidValue(key: key.path, problem: "\"\(raw)\" is not one of \(allowed)")
        }
        return value
    }

    private func read<Value>(
        _ key: ConfigurationKey,
        _ body: (ConfigKey) throws -> Value
    ) throws(ConfigurationError) -> Value? {
        guard let source = source(of: key) else { return nil }
        do {
            return try body(ConfigKey(key.path))
        } catch {
            throw .wrongType(key: key.path, expected: key.kind.expectation, source: source)
        }
    }

    /// Where the winning value of `key` comes from, for error messages.
    private func source(of key: ConfigurationKey) -> String? {
        if overrides[key.environmentVariable] != nil {
            return key.environmentVariable
        }
        if let file, file.setKeys.contains(key.path) {
            return file.path
        }
        return nil
    }
}
