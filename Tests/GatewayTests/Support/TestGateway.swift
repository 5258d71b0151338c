import Foundation
import Logging
@testable import Gateway

/// A gateway on 127.0.0.1 port 0 for one test, stopped when released.
final class TestGateway {
    let server: GatewayServer
    let port: Int

    init(tls: Bool = false, rsa: Bool = false, configure: (inout TransportSettings) -> Void = { _ in }) throws {
        var settings = TransportSettings()
        settings.port = 0
        settings.eventLoops = 2
        settings.echoEnabled = true
        if tls {
            let pair = try rsa ? DevelopmentCertificate.rsa.get() : DevelopmentCertificate.ecdsa.get()
            settings.certificateFile = pair.certificate
            settings.privateKeyFile = pair.key
        }
        configure(&settings)
        server = try GatewayServer(settings: settings, logger: Logger(label: "test", factory: { _ in SwiftLogNoOpLogHandler() }))
        port = try server.start()
    }

    deinit { server.stop() }
}

/// Self-signed pairs made once per test run with scripts/gen-dev-cert.
enum DevelopmentCertificate {
    typealias Pair = (certificate: String, key: String)
    static let ecdsa = make(keyType: "ec")
    static let rsa = make(keyType: "rsa")

    private static func make(keyType: String) -> Result<Pair, TestClientError> {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent().deletingLastPathComponent()
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("chat-gateway-tests-\(getpid())-\(keyType)").path
        let process = Process()
        process.executableURL = root.appendingPathComponent("scripts/gen-dev-cert")
        process.arguments = [dir]
        process.standardOutput = FileHandle.nullDevice
        process.environment = ProcessInfo.processInfo.environment.merging(["KEY_TYPE": keyType]) { $1 }
        do {
            try process.run()
            process.waitUntilExit()
        } catch {
            return .failure(TestClientError("gen-dev-cert: \(error)"))
        }
        guard process.terminationStatus == 0 else { return .failure(TestClientError("gen-dev-cert failed")) }
        return .success((dir + "/dev-cert.pem", dir + "/dev-key.pem"))
    }
}
