package scenario

import "slices"

// Feasible returns every package that meets the BATNA of each listed
// party, in package order (issue 0 the most significant digit). It walks
// the packages depth first and prunes a branch as soon as some party can
// no longer reach its BATNA whatever the remaining issues' options: the
// enumerator that validates scenarios. With no parties listed it returns
// every package.
func Feasible(s *Scenario, parties []int) [][]int {
	var out [][]int
	walk(s, parties, func(pkg []int) { out = append(out, slices.Clone(pkg)) })
	return out
}

// CountFeasible is len(Feasible(s, parties)) without keeping the packages.
func CountFeasible(s *Scenario, parties []int) int {
	n := 0
	walk(s, parties, func([]int) { n++ })
	return n
}

// walk calls fn with every package meeting the BATNA of each listed party
// (fn must not keep pkg).
func walk(s *Scenario, parties []int, fn func(pkg []int)) {
	n := len(s.Issues)
	// rest[p][i] is party p's best total over issues i..n-1.
	rest := make([][]int, len(parties))
	for j, p := range parties {
		r := make([]int, n+1)
		for i := n - 1; i >= 0; i-- {
			r[i] = r[i+1] + slices.Max(s.Parties[p].Scores[i])
		}
		rest[j] = r
	}
	pkg := make([]int, n)
	sums := make([]int, len(parties))
	var rec func(i int)
	rec = func(i int) {
		if i == n {
			fn(pkg)
			return
		}
		for k := range s.Issues[i].Options {
			ok := true
			for j, p := range parties {
				sums[j] += s.Parties[p].Scores[i][k]
				if sums[j]+rest[j][i+1] < s.Parties[p].BATNA {
					ok = false
				}
			}
			if ok {
				pkg[i] = k
				rec(i + 1)
			}
			for j, p := range parties {
				sums[j] -= s.Parties[p].Scores[i][k]
			}
		}
	}
	rec(0)
}

// PackageAt decodes package number idx (0 ≤ idx < Packages) in package
// order: issue 0 is the most significant digit.
func PackageAt(s *Scenario, idx int) []int {
	n := len(s.Issues)
	pkg := make([]int, n)
	for i := n - 1; i >= 0; i-- {
		m := len(s.Issues[i].Options)
		pkg[i] = idx % m
		idx /= m
	}
	return pkg
}

// IsFeasible reports whether pkg meets the BATNA of each listed party.
func IsFeasible(s *Scenario, parties []int, pkg []int) bool {
	for _, p := range parties {
		if s.Utility(p, pkg) < s.Parties[p].BATNA {
			return false
		}
	}
	return true
}
