/// The release these programs and this library belong to: what
/// `--version` prints, `/healthz` and the `countersign_build_info` metric
/// report, and the agent sends in its `User-Agent`.
public enum CountersignVersion {
    public static let current = "0.10.0"
}
