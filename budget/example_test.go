package budget_test

import (
	"context"
	"fmt"
	"time"

	"github.com/remote-segments/remote_segments/budget"
)

// One chunk through the whole protocol: reserve before the fetch, commit the
// decoded size, release as the consumer copies vectors out, close on exit.
func Example() {
	ctx := context.Background()
	b := budget.New(budget.Size(1<<30, 0, 0, 0)) // a 1 GiB query: 256 MiB cap

	lease, err := b.Reserve(ctx, 8<<20) // 8 MiB on the wire
	if err != nil {
		return // ctx was cancelled; nothing is held
	}
	defer lease.Close() // refunds whatever is left on every path
	fmt.Println("reserved:", lease.Held()>>20, "MiB")

	// ... fetch and decode ...
	lease.Commit(10 << 20) // decoded to 10 MiB: 2 MiB refunded
	fmt.Println("committed:", lease.Held()>>20, "MiB")

	for range 4 { // DuckDB consumes the batch vector by vector
		lease.Release(2 << 20)
	}
	fmt.Println("after 4 vectors:", lease.Held()>>20, "MiB")
	fmt.Printf("next estimate: ×%.2f\n", b.Stats().Multiplier)

	// Output:
	// reserved: 12 MiB
	// committed: 10 MiB
	// after 4 vectors: 2 MiB
	// next estimate: ×1.45
}

func ExampleSize() {
	const mib = 1 << 20
	fmt.Println(budget.Size(100*mib, 0, 0, 0)/mib, "MiB") // below the minimum
	fmt.Println(budget.Size(1000*mib, 0, 0, 0)/mib, "MiB")
	fmt.Println(budget.Size(1<<40, 0, 0, 0)/mib, "MiB") // above the maximum
	fmt.Println(budget.Size(1000*mib, 0.5, 0, 256*mib)/mib, "MiB")
	// Output:
	// 64 MiB
	// 250 MiB
	// 1024 MiB
	// 256 MiB
}

// Two queries share a process-wide ceiling: each stays within its own cap
// and together they stay within the parent's.
func ExampleWithParent() {
	process := budget.New(100)
	q1 := budget.New(80, budget.WithParent(process), budget.WithMultiplier(1))
	q2 := budget.New(80, budget.WithParent(process), budget.WithMultiplier(1))

	ctx := context.Background()
	a, _ := q1.Reserve(ctx, 70)
	// 40 fits q2, but the process has only 30 left: q2 waits (here 10 ms,
	// then gives up).
	short, cancel := context.WithTimeout(ctx, 10*time.Millisecond)
	defer cancel()
	_, err := q2.Reserve(short, 40)
	fmt.Println("q2 gets 40:", err == nil)
	b, err := q2.Reserve(ctx, 30)
	fmt.Println("q2 gets 30:", err == nil)
	fmt.Println("process in use:", process.Stats().InUse)
	a.Close()
	b.Close()
	// Output:
	// q2 gets 40: false
	// q2 gets 30: true
	// process in use: 100
}

// A chunk larger than the whole budget is admitted alone, and counted.
func ExampleBudget_String() {
	b := budget.New(64<<20, budget.WithMultiplier(1))
	big, _ := b.Reserve(context.Background(), 100<<20)
	big.Commit(90 << 20)
	big.Close()
	fmt.Println(b)
	// Output:
	// budget cap=64.0MiB in_use=0B peak=100.0MiB (156.2%) waits=0 wait=0s max_wait=0s oversize=1 overcommit=0 ratio=1.00 reserved=100.0MiB committed=90.0MiB released=90.0MiB
}

// Buffers come from the budget's pool and go back to it when their lease
// closes: the next chunk reuses memory the last one already faulted in.
func ExampleLease_Buffer() {
	ctx := context.Background()
	b := budget.New(64<<20, budget.WithMultiplier(1))
	for chunk := range 3 {
		lease, err := b.Reserve(ctx, 8<<20)
		if err != nil {
			return
		}
		buf := lease.Buffer(8 << 20) // fetch the chunk into buf, decode it
		_ = buf
		lease.Close() // DuckDB consumed the chunk: buf goes back to the pool
		st := b.PoolStats()
		fmt.Printf("chunk %d: buffers allocated %d, reused %d\n", chunk, st.Fresh, st.Reused)
	}
	// Output:
	// chunk 0: buffers allocated 1, reused 0
	// chunk 1: buffers allocated 1, reused 1
	// chunk 2: buffers allocated 1, reused 2
}
