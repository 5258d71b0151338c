/// Why a store could not open, load, write or read, in words for the log; the same
/// type from every backend.
public struct StoreError: Error, CustomStringConvertible, Sendable {
    public var description: String
    public init(_ description: String) { self.description = description }
}
