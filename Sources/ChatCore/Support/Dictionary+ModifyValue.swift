extension Dictionary {
    /// Changes the value under `key` in place and answers what `body` answers; nil (and
    /// `body` not called) when there is none.
    ///
    /// `dictionary[key]?.change()` looks the same, but the compiler copies the value out and
    /// back, so the arrays, sets and dictionaries inside it are copied on every change (the
    /// per-member ranges of `ReadStates` were, once per stored message). Through
    /// `values[index]` the value is changed where it lives.
    @inlinable
    @discardableResult
    mutating func modifyValue<Result>(forKey key: Key, _ body: (inout Value) throws -> Result) rethrows -> Result? {
        guard let index = index(forKey: key) else { return nil }
        return try body(&values[index])
    }
}
