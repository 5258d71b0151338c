// swift-tools-version: 6.1
// Micro-benchmarks for the WebSocket core, the store, ChatCore and the event loop's fan-out (ordo-one/benchmark).
// Run from this directory: swift package --disable-sandbox benchmark
import PackageDescription

let package = Package(
    name: "chat-gateway-benchmarks",
    platforms: [.macOS(.v15)],
    dependencies: [
        .package(url: "https://github.com/ordo-one/benchmark", from: "1.38.1", traits: ["MallocInterposer"]),
        .package(name: "chat-gateway", path: ".."),
        // The versions the gateway resolves; StorageBenchmarks opens a PostgresStore and makes its database.
        .package(url: "https://github.com/vapor/postgres-nio", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-log", from: "1.16.2"),
    ],
    targets: [
        .executableTarget(
            name: "WebSocketBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "WebSocket", package: "chat-gateway"),
            ],
            path: "Benchmarks/WebSocketBenchmarks",
            swiftSettings: [.swiftLanguageMode(.v6)],
            plugins: [
                .plugin(name: "BenchmarkPlugin", package: "benchmark"),
            ]
        ),
        .executableTarget(
            name: "StorageBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "Storage", package: "chat-gateway"),
                .product(name: "SQLiteStorage", package: "chat-gateway"),
                .product(name: "PostgresStorage", package: "chat-gateway"),
                .product(name: "ChatCore", package: "chat-gateway"),
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Benchmarks/StorageBenchmarks",
            swiftSettings: [.swiftLanguageMode(.v6)],
            plugins: [
                .plugin(name: "BenchmarkPlugin", package: "benchmark"),
            ]
        ),
        .executableTarget(
            name: "ChatCoreBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "ChatCore", package: "chat-gateway"),
            ],
            path: "Benchmarks/ChatCoreBenchmarks",
            swiftSettings: [.swiftLanguageMode(.v6)],
            plugins: [
                .plugin(name: "BenchmarkPlugin", package: "benchmark"),
            ]
        ),
        .executableTarget(
            name: "FanOutBenchmarks",
            dependencies: [
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "EventLoop", package: "chat-gateway"),
            ],
            path: "Benchmarks/FanOutBenchmarks",
            swiftSettings: [.swiftLanguageMode(.v6)],
            plugins: [
                .plugin(name: "BenchmarkPlugin", package: "benchmark"),
            ]
        ),
    ]
)
