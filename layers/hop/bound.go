package hop

import (
	"fmt"

	"github.com/layercast/layercast/compose"
)

// bufferBound is hop's LayerInfo.BufferBound: peak_buffer_bytes counts the
// payload bytes kept until every site has them (at most max_pending per
// source site) and those on the links (at most max_pending queued and
// window sent and unacknowledged per link, one link per other site). The
// sites are at most those of the members of the node's groups, and at most
// 64.
func bufferBound(p compose.Params, load compose.NodeLoad) (int64, string) {
	sites := int64(min(maxSite+1, max(load.Groups*load.Members, 1)))
	keep, window := int64(p.Int("max_pending")), int64(p.Int("window"))
	m := int64(load.MaxMessage)
	b := sites*keep*m + (sites-1)*(keep+window)*m
	return b, fmt.Sprintf("%d B x (max_pending %s kept x %d sites + (max_pending %s queued + window %s) x %d links)",
		m, p.Text("max_pending"), sites, p.Text("max_pending"), p.Text("window"), sites-1)
}
