package main

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// Every design the report exports for the guides' example tables (--write-mapping) is a mapping
// that `rekey check` accepts and `rekey migrate` runs on the same input, every row written or
// rejected.
func TestReportExportedDesignsMigrate(t *testing.T) {
	t.Parallel()
	const rows = 3000
	const base = 1704067200000
	channels := []string{"alipay", "alipay", "alipay", "taobao", "taobao", "wechat", "jd"}
	// rows in creation order: rising ids and times, users and sellers at random
	spread := func(i, n int) int { return (i*7919 + 13) % n }
	tables := []struct {
		name, mapping, key string
		header             string
		row                func(i int) string
		queries            []string
		want               []string // designs among those written
	}{
		{"channel_orders", "../../mappings/channel_orders.yaml", "", "channel,id,ts,status,location",
			func(i int) string {
				return fmt.Sprintf("%s,%d,%d,paid,hz", channels[spread(i, 7)], 1_000_000_000+i, base+i)
			}, nil, []string{"code_channel"}},
		// the naive key, where long(id) and code(channel) apply to plain key columns
		{"channel_orders_naive", "../../mappings/channel_orders.yaml", "[channel][id][ts]", "channel,id,ts,status,location",
			func(i int) string {
				return fmt.Sprintf("%s,%d,%d,paid,hz", channels[spread(i, 7)], 1_000_000_000+i, base+i)
			}, nil, []string{"long_id", "code_channel", "hash_next"}},
		{"orders", "../../mappings/orders.yaml", "", "userid,orderid,channel,ts,status,location,amount",
			func(i int) string {
				return fmt.Sprintf("user%05d,%d,%s,%d,paid,hz,12.50", spread(i, 500), i, channels[i%7], base+i)
			}, []string{"userid=, orderid range, newest_first"}, []string{"newest_first", "source_key"}},
		{"logs", "../../mappings/logs.yaml", "", "ts,hostname,log-event,level,latency_ms,message",
			func(i int) string {
				return fmt.Sprintf("%d,web-%02d,event-%d,info,%d,ok", base+i*7, spread(i, 20), i%5, i%300)
			}, []string{"ts range", "hostname=, log-event=, ts range, newest_first"}, []string{"query_order_newest_first", "code_hostname"}},
		{"transactions_by_seller", "../../mappings/transactions_by_seller.yaml", "", "order_number,seller_id,buyer_id,ts,item_id,quantity,amount,status",
			func(i int) string {
				return fmt.Sprintf("%d,s%x,buyer%05d,%d,item,1,3.20,paid", i, spread(i, 300)*104729, spread(i+7, 1000), base+i)
			}, nil, []string{"hash_next"}},
	}
	count := func(out, what string) int {
		m := regexp.MustCompile(`(?m)^  ` + what + ` +(\d+)$`).FindStringSubmatch(out)
		if m == nil {
			return -1
		}
		n, _ := strconv.Atoi(m[1])
		return n
	}
	for _, tc := range tables {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			lines := []string{tc.header}
			for i := range rows {
				lines = append(lines, tc.row(i))
			}
			input := writeFile(t, dir, tc.name+".csv", strings.Join(lines, "\n")+"\n")
			mapping := tc.mapping
			if tc.key != "" {
				b, err := os.ReadFile(tc.mapping)
				if err != nil {
					t.Fatal(err)
				}
				text := regexp.MustCompile(`(?m)^  primary_key: .*$`).ReplaceAllString(string(b), `  primary_key: "`+tc.key+`"`)
				mapping = writeFile(t, dir, "mapping.yaml", text)
			}
			designs := filepath.Join(dir, "designs")
			args := []string{"report", "-m", mapping, "--source", "file:" + input, "--write-mapping", designs, "--progress", "never", "--tmp", t.TempDir()}
			for _, q := range tc.queries {
				args = append(args, "--query", q)
			}
			code, stdout, stderr := runCLI(t, args...)
			if code != 0 {
				t.Fatalf("report: exit %d\n%s%s", code, stdout, stderr)
			}
			files, err := filepath.Glob(filepath.Join(designs, "*.yaml"))
			if err != nil || len(files) < 4 {
				t.Fatalf("wrote %v (%v)\n%s", files, err, stdout)
			}
			for _, id := range tc.want {
				if !slices.Contains(files, filepath.Join(designs, id+".yaml")) {
					t.Errorf("no design %s among %v\n%s", id, files, stdout)
				}
			}
			for _, f := range files {
				if code, stdout, stderr := runCLI(t, "check", "-m", f, "--source", "file:"+input); code != 0 {
					t.Errorf("rekey check %s: exit %d\n%s%s", filepath.Base(f), code, stdout, stderr)
					continue
				}
				out := filepath.Join(dir, "out-"+strings.TrimSuffix(filepath.Base(f), ".yaml"))
				code, stdout, stderr := runCLI(t, "migrate", "-m", f, "--source", "file:"+input, "--out", out, "--progress", "never")
				in, written, rejected := count(stdout, "rows in"), count(stdout, "rows written"), count(stdout, "rows rejected")
				if code != 0 || in != rows || written+rejected != in {
					t.Errorf("rekey migrate %s: exit %d, rows in %d, written %d, rejected %d\n%s%s", filepath.Base(f), code, in, written, rejected, stdout, stderr)
				}
			}
			t.Logf("%s: %d designs checked and migrated", tc.name, len(files))
		})
	}
}
