// Command histq prints percentiles of the histograms in a run's samples.jsonl, for figures the
// report does not print (the open model's send-lag p50, for one):
//
//	go run ./tools/histq -field send_lag_histogram /tmp/run/samples.jsonl
//
// It reads every line, finds the field (at the top level or under "metrics"/"sample"), decodes
// it with hdrhistogram-go and prints the sample id, count, p50, p90, p99 and max in
// microseconds.
package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"

	hdr "github.com/HdrHistogram/hdrhistogram-go"
)

func main() {
	field := flag.String("field", "histogram", "the histogram field to read")
	flag.Parse()
	if flag.NArg() != 1 {
		fmt.Fprintln(os.Stderr, "usage: histq [-field NAME] SAMPLES.jsonl")
		os.Exit(2)
	}
	file, err := os.Open(flag.Arg(0))
	if err != nil {
		fmt.Fprintln(os.Stderr, "histq:", err)
		os.Exit(1)
	}
	defer file.Close()
	scanner := bufio.NewScanner(file)
	scanner.Buffer(make([]byte, 1<<20), 64<<20)
	fmt.Println("sample\tcount\tp50_us\tp90_us\tp99_us\tmax_us")
	for scanner.Scan() {
		var record map[string]any
		if err := json.Unmarshal(scanner.Bytes(), &record); err != nil {
			fmt.Fprintln(os.Stderr, "histq: a line that is not JSON:", err)
			os.Exit(1)
		}
		text, ok := find(record, *field)
		if !ok {
			continue
		}
		h, err := hdr.Decode([]byte(text))
		if err != nil {
			fmt.Fprintln(os.Stderr, "histq:", err)
			os.Exit(1)
		}
		us := func(q float64) float64 { return float64(h.ValueAtQuantile(q)) / 1e3 }
		fmt.Printf("%v\t%d\t%.1f\t%.1f\t%.1f\t%.1f\n", record["sample"], h.TotalCount(), us(50), us(90), us(99), float64(h.Max())/1e3)
	}
}

// find looks for field at the top level of record and one level down.
func find(record map[string]any, field string) (string, bool) {
	if text, ok := record[field].(string); ok {
		return text, true
	}
	for _, value := range record {
		if nested, ok := value.(map[string]any); ok {
			if text, ok := nested[field].(string); ok {
				return text, true
			}
		}
	}
	return "", false
}
