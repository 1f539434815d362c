// Command gorand prints the draws of Go's math/rand that the FGD protocol's arrivals take
// (solver/bench/fgd.py, arrivals; docs/fgd.md), so that the bench gets the authors' arrival
// order seed for seed:
//
//   - a source seeded with -seed;
//   - one Int(), drawn and dropped (the authors' simulator draws it right after seeding, as
//     an argument of a debug log line that Go evaluates even when it does not log);
//   - line 1: the permutation Shuffle makes of 0..n-1;
//   - line 2: -draws values of Intn(n), or with -shrink Intn(n), Intn(n-1), ... (a list that
//     loses the item drawn).
//
// A private source (rand.New) draws exactly what the global one does after rand.Seed.
package main

import (
	"bufio"
	"flag"
	"fmt"
	"math/rand"
	"os"
	"strconv"
)

func main() {
	seed := flag.Int64("seed", 0, "the seed")
	n := flag.Int("n", 0, "the items shuffled and drawn from (at least 1)")
	draws := flag.Int("draws", 0, "the Intn draws after the shuffle")
	shrink := flag.Bool("shrink", false, "draw from one item fewer each time (at most -n draws)")
	flag.Parse()
	if *n < 1 || *draws < 0 || (*shrink && *draws > *n) {
		fmt.Fprintln(os.Stderr, "gorand: -n must be at least 1 and -draws from 0 to -n with -shrink")
		os.Exit(2)
	}
	r := rand.New(rand.NewSource(*seed))
	r.Int()
	perm := make([]int, *n)
	for i := range perm {
		perm[i] = i
	}
	r.Shuffle(*n, func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
	out := bufio.NewWriter(os.Stdout)
	line := func(next func(int) int, count int) {
		for i := 0; i < count; i++ {
			if i > 0 {
				out.WriteByte(' ')
			}
			out.WriteString(strconv.Itoa(next(i)))
		}
		out.WriteByte('\n')
	}
	line(func(i int) int { return perm[i] }, *n)
	line(func(i int) int {
		if *shrink {
			return r.Intn(*n - i)
		}
		return r.Intn(*n)
	}, *draws)
	if err := out.Flush(); err != nil {
		fmt.Fprintln(os.Stderr, "gorand:", err)
		os.Exit(1)
	}
}
