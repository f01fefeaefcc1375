package zz
import ("testing";"fmt";"forge/internal/membw";"sort")
func TestDist(t *testing.T){
	buf := membw.NewBuffer(512<<20)
	for _, th := range []int{1,2} {
		var r []float64
		for range 30 { d := membw.ReadPass(buf, th); r = append(r, float64(len(buf)*8)/d.Seconds()/1e9) }
		sort.Float64s(r)
		fmt.Printf("threads %d: min %.1f p25 %.1f med %.1f p75 %.1f max %.1f\n", th, r[0], r[7], r[15], r[22], r[29])
	}
}
