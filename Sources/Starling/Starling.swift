// The umbrella module: `import Starling` gives an app what it needs to run a
// bitchat node: the wire format, the cryptography, the mesh router, the node
// core and its runtime, and the UDP and in-memory transports. Bluetooth LE
// (BlueZ over D-Bus) is the separate `StarlingBluetooth` product.
@_exported import StarlingCrypto
@_exported import StarlingMesh
@_exported import StarlingNode
@_exported import StarlingNodeCore
@_exported import StarlingStately
@_exported import StarlingTransport
@_exported import StarlingWire
