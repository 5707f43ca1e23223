// Package all registers every layer with compose. Import it for its side
// effect: programs that build stacks from spec strings need it.
package all

// Each layer package registers itself in an init function; list it here
// once it exists.
import (
	_ "github.com/layercast/layercast/layers/auth"      // authenticated groups (HMAC or AES-GCM)
	_ "github.com/layercast/layercast/layers/fifo"      // per-sender FIFO order over reliable
	_ "github.com/layercast/layercast/layers/frag"      // fragmentation and reassembly of long messages
	_ "github.com/layercast/layercast/layers/gms"       // group membership and the membership service
	_ "github.com/layercast/layercast/layers/hop"       // Spread wide area: Hop links, site trees, agreed order
	_ "github.com/layercast/layercast/layers/lec"       // Ricochet lateral error correction
	_ "github.com/layercast/layercast/layers/mflow"     // MFLOW multicast flow control
	_ "github.com/layercast/layercast/layers/pack"      // packing small messages into one datagram
	_ "github.com/layercast/layercast/layers/reliable"  // NAK-based reliable multicast (SRM / NAKACK)
	_ "github.com/layercast/layercast/layers/ring"      // Spread's Ring protocol: agreed order inside a site
	_ "github.com/layercast/layercast/layers/tokenring" // QSM regional multicast with token-ring recovery
	_ "github.com/layercast/layercast/layers/vsync"     // view-synchronous flush
)
