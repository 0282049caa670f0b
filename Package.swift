// swift-tools-version:6.2
import PackageDescription

let swiftSettings: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("MemberImportVisibility"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "countersign",
    platforms: [.macOS(.v15)],
    products: [
        .executable(name: "device-broker", targets: ["device-broker"]),
        .executable(name: "device-agent", targets: ["device-agent"]),
        .executable(name: "countersign-bench", targets: ["countersign-bench"]),
        .library(name: "CountersignClient", targets: ["CountersignClient"]),
    ],
    dependencies: [
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-auth.git", from: "2.5.0"),
        .package(url: "https://github.com/vapor/jwt-kit.git", from: "5.8.0"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "4.5.2"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/ordo-one/benchmark.git", from: "1.38.1", traits: ["MallocInterposer"]),
    ],
    targets: [
        .target(
            name: "CountersignCore",
            dependencies: [
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "CountersignOTP",
            dependencies: ["CountersignCore", .product(name: "HummingbirdOTP", package: "hummingbird-auth")],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "CountersignStore",
            dependencies: ["CountersignCore"],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "CountersignSQLite",
            dependencies: [
                "CountersignCore",
                "CountersignStore",
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "CountersignPostgres",
            dependencies: [
                "CountersignCore",
                "CountersignStore",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "CountersignPostgresTesting",
            dependencies: ["CountersignPostgres", .product(name: "Logging", package: "swift-log")],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "CountersignStoreTesting",
            dependencies: ["CountersignCore", "CountersignStore", .product(name: "Crypto", package: "swift-crypto")],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "CountersignSenders",
            dependencies: [
                "CountersignCore",
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            swiftSettings: swiftSettings
        ),
        // The web approver's files, compiled into the binary: the broker
        // serves them with no files beside it to install.
        .target(
            name: "CountersignApprover",
            dependencies: [.product(name: "Crypto", package: "swift-crypto")],
            resources: [
                .embedInCode("Web/index.html"),
                .embedInCode("Web/app.css"),
                .embedInCode("Web/app.js"),
                .embedInCode("Web/account.js"),
                .embedInCode("Web/broker.js"),
                .embedInCode("Web/keys.js"),
                .embedInCode("Web/passkeys.js"),
                .embedInCode("Web/sw.js"),
                .embedInCode("Web/manifest.webmanifest"),
                .embedInCode("Web/icon.svg"),
                .embedInCode("Web/icon-192.png"),
                .embedInCode("Web/icon-512.png"),
                .embedInCode("Console/console.html"),
                .embedInCode("Console/console.css"),
                .embedInCode("Console/console.js"),
                .embedInCode("Console/views.js"),
                .embedInCode("Console/manage.js"),
                .embedInCode("Console/search.js"),
                .embedInCode("Console/invitations.js"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "CountersignBroker",
            dependencies: [
                "CountersignApprover",
                "CountersignCore",
                "CountersignQR",
                "CountersignSenders",
                "CountersignStore",
                "CountersignSQLite",
                "CountersignPostgres",
                "CountersignOTP",
                "CLDAP",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            swiftSettings: swiftSettings
        ),
        .target(
            name: "CountersignClient",
            dependencies: [
                "CountersignCore",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "CryptoExtras", package: "swift-crypto"),
            ],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "device-broker",
            dependencies: [
                "CountersignBroker",
                "CountersignSenders",
                "CountersignStore",
                "CountersignSQLite",
                "CountersignCore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "Prometheus", package: "swift-prometheus"),
            ],
            swiftSettings: swiftSettings
        ),
        // Debian's libqrencode, for the QR codes the agent prints and the
        // console shows.
        .systemLibrary(name: "CQREncode", pkgConfig: "libqrencode", providers: [.apt(["libqrencode-dev"])]),
        .systemLibrary(name: "CLDAP", pkgConfig: "ldap", providers: [.apt(["libldap-dev"])]),
        .target(name: "CountersignQR", dependencies: ["CQREncode"], swiftSettings: swiftSettings),
        .executableTarget(
            name: "device-agent",
            dependencies: [
                "CountersignQR",
                "CountersignClient",
                "CountersignCore",
                "CountersignOTP",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
            ],
            swiftSettings: swiftSettings
        ),
        .executableTarget(
            name: "countersign-bench",
            dependencies: [
                "CountersignClient",
                "CountersignCore",
                "CountersignPostgres",
                "CountersignSQLite",
                "CountersignStore",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ],
            swiftSettings: swiftSettings
        ),
        // Micro-benchmarks of the hot pieces: `swift package benchmark` (release build).
        .executableTarget(
            name: "CountersignBenchmarks",
            dependencies: [
                "CountersignCore",
                "CountersignStore",
                "CountersignSQLite",
                "CountersignBroker",
                .product(name: "Benchmark", package: "benchmark"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            path: "Benchmarks/CountersignBenchmarks",
            swiftSettings: swiftSettings,
            plugins: [.plugin(name: "BenchmarkPlugin", package: "benchmark")]
        ),
        .testTarget(
            name: "CountersignCoreTests",
            dependencies: [
                "CountersignCore", .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Crypto", package: "swift-crypto"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "CountersignSQLiteTests",
            dependencies: [
                "CountersignSQLite", "CountersignStore", "CountersignStoreTesting", "CountersignCore",
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "CountersignPostgresTests",
            dependencies: [
                "CountersignPostgres", "CountersignPostgresTesting", "CountersignStore", "CountersignStoreTesting",
                "CountersignCore", .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "CountersignBrokerTests",
            dependencies: [
                "CountersignBroker", "CountersignSenders", "CountersignCore", "CountersignStore", "CountersignSQLite",
                "CountersignClient",
                "CountersignOTP",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdTLS", package: "hummingbird"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "HummingbirdTesting", package: "hummingbird"),
                .product(name: "HummingbirdOTP", package: "hummingbird-auth"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "GRDB", package: "GRDB.swift"),
            ],
            swiftSettings: swiftSettings
        ),
        .testTarget(
            name: "EndToEndTests",
            dependencies: [
                "CountersignCore", "CountersignClient", "CountersignPostgresTesting", "CountersignSenders",
                "device-broker",
                "device-agent",
                "countersign-bench",
                .product(name: "JWTKit", package: "jwt-kit"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ],
            swiftSettings: swiftSettings
        ),
    ]
)
