package multiparty_test

import (
	"fmt"
	"testing"

	"github.com/parleyhq/parley/dataset"
	"github.com/parleyhq/parley/rollout/multiparty"
	protocolx "github.com/parleyhq/parley/rollout/multiparty/protocol"
)

func TestDebugTiny(t *testing.T) {
	for step := 1; step <= 40; step++ {
		rs, err := dataset.ReadAllRollouts(fmt.Sprintf("/tmp/wtm/mpt/multiparty-tiny/rollouts/step-%06d.parquet", step))
		if err != nil {
			break
		}
		n, coop := 0, 0
		var surplus float64
		for i := range rs {
			r := &rs[i]
			for _, tn := range r.Turns {
				if tn.Agent == "g1" {
					n++
					if protocolx.ParseVoteLenient(tn.Text) {
						coop++
					}
				}
			}
			o, _ := multiparty.ParseOutcome(r)
			surplus += float64(o.Result("g1").Surplus)
		}
		fmt.Printf("step %d g1 turns %d cooperative %.3f g1 surplus %.2f\n", step, n, float64(coop)/float64(n), surplus/float64(len(rs)))
	}
}
