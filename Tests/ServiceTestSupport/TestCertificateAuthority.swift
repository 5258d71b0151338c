import Foundation

/// A throwaway CA made with the openssl CLI at test time, and server certificates it
/// signs (for a `redis-server --tls-port` or any TLS peer of a test).
public struct TestCertificateAuthority: Sendable {
    public let directory: String
    public var certificate: String { directory + "/ca.pem" }
    private var key: String { directory + "/ca-key.pem" }

    public init(name: String) throws {
        directory = NSTemporaryDirectory() + "test-ca-\(name)-\(getpid())-\(UUID().uuidString.prefix(8))"
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        try Self.openssl(["req", "-x509", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                          "-keyout", key, "-out", certificate, "-days", "2", "-subj", "/CN=test CA \(name)",
                          "-addext", "basicConstraints=critical,CA:TRUE", "-addext", "keyUsage=critical,keyCertSign"])
    }

    /// A server certificate and key signed by this CA, naming `subjectAltName`
    /// (e.g. `IP:127.0.0.1`).
    public func serverCertificate(named name: String, subjectAltName: String) throws -> (certificate: String, key: String) {
        let serverKey = directory + "/\(name)-key.pem"
        let request = directory + "/\(name).csr"
        let serverCertificate = directory + "/\(name).pem"
        let extensions = directory + "/\(name).ext"
        try Data("subjectAltName=\(subjectAltName)\n".utf8).write(to: URL(fileURLWithPath: extensions))
        try Self.openssl(["req", "-new", "-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes",
                          "-keyout", serverKey, "-out", request, "-subj", "/CN=\(name)"])
        try Self.openssl(["x509", "-req", "-in", request, "-CA", certificate, "-CAkey", key, "-CAcreateserial",
                          "-out", serverCertificate, "-days", "2", "-extfile", extensions])
        return (serverCertificate, serverKey)
    }

    private static func openssl(_ arguments: [String]) throws {
        let result = try ChildProcess.run("/usr/bin/openssl", arguments)
        guard result.status == 0 else { throw ChildProcessError("openssl \(arguments.first ?? ""): \(result.output)") }
    }
}
