import Testing

/// The in-process node suites run one test at a time: they are CPU-bound
/// (hours of virtual time, hundreds of identities), and run side by side they
/// would hold both of a small machine's threads while the process tests'
/// waits run out.
@Suite(.serialized) enum InProcessNodes {}
