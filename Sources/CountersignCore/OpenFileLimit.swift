#if canImport(Glibc)
    import Glibc
#endif

/// The process's limit on open files.
public enum OpenFileLimit {
    /// Raises the soft limit to the hard one (as Go and nginx do: the soft
    /// limit's default of 1,024 is a relic of select(2), which NIO does not
    /// use) and returns the limit now in force.
    @discardableResult
    public static func raise() -> Int {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 1024 }
        if limit.rlim_cur < limit.rlim_max {
            var raised = limit
            raised.rlim_cur = limit.rlim_max
            if setrlimit(Int32(RLIMIT_NOFILE.rawValue), &raised) == 0 { limit = raised }
        }
        return limit.rlim_cur >= rlim_t(Int32.max) ? Int(Int32.max) : Int(limit.rlim_cur)
    }
}
