// swift-tools-version: 6.1
import PackageDescription

let strict: [SwiftSetting] = [
    .swiftLanguageMode(.v6),
]

/// The I/O and fan-out targets touch class-held buffers and queues for every delivery; the
/// compiler already proves exclusive access statically, and the runtime re-check of each
/// access cost ~6 % of the gateway's CPU in perf. Release builds only.
let hotPath: [SwiftSetting] = strict + [
    .unsafeFlags(["-enforce-exclusivity=unchecked"], .when(configuration: .release)),
]

let package = Package(
    name: "chat-gateway",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "chat-gateway", targets: ["chat-gateway"]),
        .executable(name: "chat-loadtest", targets: ["chat-loadtest"]),
        .library(name: "WebSocket", targets: ["WebSocket"]),
        .library(name: "WebSocketDriver", targets: ["WebSocketDriver"]),
        .library(name: "EventLoop", targets: ["EventLoop"]),
        .library(name: "Gateway", targets: ["Gateway"]),
        .library(name: "Storage", targets: ["Storage"]),
        // For Benchmarks/ (StorageBenchmarks' SQLite and PostgreSQL group commit).
        .library(name: "SQLiteStorage", targets: ["SQLiteStorage"]),
        .library(name: "PostgresStorage", targets: ["PostgresStorage"]),
        .library(name: "ChatCore", targets: ["ChatCore"]),
        // The Swift SDK for apps (docs/clients.md).
        .library(name: "ChatClient", targets: ["ChatClient"]),
    ],
    dependencies: [
        .package(url: "https://github.com/apple/swift-argument-parser", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-configuration", from: "1.4.0"),
        .package(url: "https://github.com/vapor/jwt-kit", from: "5.8.0"),
        .package(url: "https://github.com/HdrHistogram/hdrhistogram-swift", from: "0.2.0"),
        .package(url: "https://github.com/apple/swift-metrics", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus", from: "2.4.1"),
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
    ],
    targets: [
        .target(name: "CZlib", linkerSettings: [.linkedLibrary("z")]),
        .target(name: "COpenSSL", linkerSettings: [.linkedLibrary("ssl"), .linkedLibrary("crypto")]),
        .target(name: "CSQLite", linkerSettings: [.linkedLibrary("sqlite3")]),
        .target(name: "CEpoll"),
        .target(name: "Redis", dependencies: ["EventLoop"], swiftSettings: strict),
        // RFC 4648 base64, both alphabets: the handshake's keys, JWT segments, cursors.
        .target(name: "Base64Coding", swiftSettings: strict),
        .target(name: "ChatCore", dependencies: ["Base64Coding", "COpenSSL"], swiftSettings: hotPath),
        // The storage layer: `Storage` is what the gateway and every backend share (the `Store`
        // protocol, its errors and snapshot, column coding, the group-commit inbox); each backend
        // is a target beside it, and none depends on the network loop (`scripts/deps --check`).
        .target(name: "Storage", dependencies: ["ChatCore"], swiftSettings: hotPath),
        .target(name: "SQLiteStorage", dependencies: ["Storage", "CSQLite", "ChatCore"], swiftSettings: hotPath),
        .target(
            name: "PostgresStorage",
            dependencies: [
                "Storage", "ChatCore",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: strict
        ),
        .target(name: "WebSocket", dependencies: ["Base64Coding", "CZlib", "COpenSSL"], swiftSettings: hotPath),
        .target(name: "EventLoop", dependencies: ["COpenSSL", "CEpoll"], swiftSettings: hotPath),
        // The WebSocket roles on the event loop: the server's upgraded connection and the
        // client's upgrade, frames and keepalive, for the gateway and every client here.
        .target(name: "WebSocketDriver", dependencies: ["WebSocket", "EventLoop"], swiftSettings: hotPath),
        // The browser files the gateway serves (the web console and the JS SDK it imports: the
        // entry module chat-client.js and the modules of chat-client/ it imports),
        // as SwiftPM resources beside the binary: no build step, no copy in Sources/.
        .target(
            name: "ClientAssets",
            path: "clients",
            // The JS SDK's tests and example run under Node (scripts/test), they are not served.
            exclude: ["js/test", "js/test-support", "js/examples"],
            sources: ["ClientAssets.swift"],
            resources: [.copy("console"), .copy("js/chat-client.js"), .copy("js/chat-client")],
            swiftSettings: strict
        ),
        .target(
            name: "Gateway",
            dependencies: [
                "WebSocket", "WebSocketDriver", "EventLoop", "ChatCore", "Storage", "SQLiteStorage", "PostgresStorage", "Redis",
                "ClientAssets", "COpenSSL",
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Configuration", package: "swift-configuration"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ],
            swiftSettings: hotPath
        ),
        // The event-loop transport is Linux's (epoll); elsewhere an app brings its own transport.
        .target(name: "ChatClient",
                dependencies: [.target(name: "WebSocket", condition: .when(platforms: [.linux])),
                               .target(name: "WebSocketDriver", condition: .when(platforms: [.linux])),
                               .target(name: "EventLoop", condition: .when(platforms: [.linux]))],
                swiftSettings: strict),
        // `chat-gateway client`: a line-based client on the WebSocket client role, not on the Gateway.
        .target(name: "TerminalClient", dependencies: ["ChatCore", "WebSocket", "WebSocketDriver", "EventLoop"],
                swiftSettings: strict),
        .executableTarget(name: "chat-client-example", dependencies: ["ChatClient"], swiftSettings: strict),
        .executableTarget(
            name: "chat-gateway",
            dependencies: ["Gateway", "TerminalClient", .product(name: "ArgumentParser", package: "swift-argument-parser")],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "chat-loadtest",
            dependencies: [
                "WebSocket", "WebSocketDriver", "EventLoop",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Histogram", package: "hdrhistogram-swift"),
            ],
            path: "Sources/chat-loadtest",
            // The tool must outrun the gateway it measures: in a saturated 1,000-member room it
            // reads every delivery on one core, and the run-time exclusivity checks of its
            // per-connection counters cost it ≈ 8 % (docs/performance.md). The gateway keeps them.
            swiftSettings: strict + [.unsafeFlags(["-enforce-exclusivity=unchecked"])]
        ),
        .testTarget(name: "WebSocketTests", dependencies: ["WebSocket"], swiftSettings: strict),
        .testTarget(name: "ChatCoreTests", dependencies: ["ChatCore", "Base64Coding"], swiftSettings: strict),
        .target(name: "CTestSpawn", path: "Tests/CTestSpawn"),
        .target(
            name: "ServiceTestSupport",
            dependencies: ["CTestSpawn", "PostgresStorage", "Storage", "ChatCore", .product(name: "PostgresNIO", package: "postgres-nio")],
            path: "Tests/ServiceTestSupport",
            swiftSettings: strict
        ),
        .testTarget(name: "StorageTests", dependencies: ["Storage", "SQLiteStorage", "PostgresStorage", "ServiceTestSupport", "ChatCore"],
                    swiftSettings: strict),
        .testTarget(name: "EventLoopTests", dependencies: ["EventLoop", "ServiceTestSupport"], swiftSettings: strict),
        .testTarget(name: "RedisTests", dependencies: ["Redis", "EventLoop", "ServiceTestSupport"], swiftSettings: strict),
        .testTarget(name: "LoadToolTests", dependencies: ["chat-loadtest", "WebSocket", "WebSocketDriver"], swiftSettings: strict),
        .testTarget(name: "ChatClientTests", dependencies: ["ChatClient", "chat-client-example", "Gateway", "EventLoop", "ServiceTestSupport",
                                                            .product(name: "Logging", package: "swift-log")],
                    swiftSettings: strict),
        .testTarget(name: "GatewayTests", dependencies: ["Gateway", "WebSocket", "Base64Coding", "EventLoop", "COpenSSL", "CSQLite", "ServiceTestSupport", "Redis", .product(name: "Logging", package: "swift-log")], swiftSettings: strict),
    ]
)
