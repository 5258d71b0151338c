/// A failure that stops the run, with a message for the operator.
struct LoadTestError: Error, CustomStringConvertible, Sendable {
    var description: String

    init(_ description: String) {
        self.description = description
    }
}
