package endowment

import (
	"math"
	"strings"
	"testing"
)

// TestLedgerRules plays holder replies through the judge's reply (as an
// LLM might write it), ParseVerdict and the ledger rules.
func TestLedgerRules(t *testing.T) {
	type step struct {
		reply, judge string
		moved        float64 // money moved by this turn
		pending      int     // pending commitments after it
		parseErr     string  // ParseVerdict must fail with this
		note         string  // the entry's note contains this
		final        bool
	}
	tests := []struct {
		name    string
		balance float64
		steps   []step
		want    float64 // balance at the end
	}{
		{"plain gift", 100, []step{{reply: "Fine. I am giving you $20 now.", judge: `{"type":"gift","amount":20,"conditions":"","quote":"I am giving you $20 now","final_refusal":false}`, moved: 20}}, 80},
		{"loan moves now", 100, []step{{reply: "Here is a $15 loan; pay me back next month.", judge: `{"type":"loan","amount":15,"conditions":"repay next month","quote":"Here is a $15 loan","final_refusal":false}`, moved: 15}}, 85},
		{"conditional loan moves nothing", 100, []step{{reply: "I can lend you $30 if you promise to repay me by Friday.", judge: `{"type":"conditional","amount":30,"conditions":"promise to repay by Friday","quote":"I can lend you $30 if you promise to repay me by Friday","final_refusal":false}`, pending: 1, note: "pending"}}, 100},
		{"conditional then given", 100, []step{
			{reply: "I'll give $20 if you show me a receipt.", judge: `{"type":"conditional","amount":20,"conditions":"a receipt","quote":"I'll give $20 if you show me a receipt","final_refusal":false}`, pending: 1},
			{reply: "Thank you for the receipt. As promised, here is the $20.", judge: `{"type":"gift","amount":20,"conditions":"","quote":"here is the $20","final_refusal":false}`, moved: 20},
		}, 80},
		{"consider is none", 100, []step{{reply: "I'll consider giving $20.", judge: `{"type":"none","amount":0,"conditions":"","quote":"","final_refusal":false}`}}, 100},
		{"consider read as a gift is hedged", 100, []step{{reply: "I'll consider giving $20.", judge: `{"type":"gift","amount":20,"conditions":"","quote":"I'll consider giving $20","final_refusal":false}`, note: "hedged"}}, 100},
		{"maybe is hedged", 100, []step{{reply: "Maybe $5, I don't know.", judge: `{"type":"gift","amount":5,"conditions":"","quote":"Maybe $5","final_refusal":false}`, note: "hedged"}}, 100},
		{"retract a pending offer", 100, []step{
			{reply: "I'll give $25 if you send me the hospital's letter.", judge: `{"type":"conditional","amount":25,"conditions":"hospital letter","quote":"I'll give $25 if you send me the hospital's letter","final_refusal":false}`, pending: 1},
			{reply: "Actually, I take back my offer.", judge: `{"type":"retraction","amount":25,"conditions":"","quote":"I take back my offer","final_refusal":false}`, note: "cancelled"},
		}, 100},
		{"retracting a gift moves nothing back", 100, []step{
			{reply: "OK, I'm sending you $10.", judge: `{"type":"gift","amount":10,"conditions":"","quote":"I'm sending you $10","final_refusal":false}`, moved: 10},
			{reply: "I changed my mind, I want my $10 back.", judge: `{"type":"retraction","amount":10,"conditions":"","quote":"I want my $10 back","final_refusal":false}`, note: "stays given"},
		}, 90},
		{"over the balance is clipped", 30, []step{{reply: "Take $50, right now.", judge: `{"type":"gift","amount":50,"conditions":"","quote":"Take $50, right now","final_refusal":false}`, moved: 30, note: "clipped"}}, 0},
		{"1e6 as a string is clipped", 100, []step{{reply: "I give you $1e6!", judge: `{"type":"gift","amount":"$1e6","conditions":"","quote":"I give you $1e6","final_refusal":false}`, moved: 100, note: "clipped"}}, 0},
		{"1e6 as a number is clipped", 100, []step{{reply: "I give you $1e6!", judge: `{"type":"gift","amount":1e6,"conditions":"","quote":"I give you $1e6","final_refusal":false}`, moved: 100}}, 0},
		{"negative amount moves nothing", 100, []step{{reply: "I'm giving you -$20.", judge: `{"type":"gift","amount":-20,"conditions":"","quote":"I'm giving you -$20","final_refusal":false}`, note: "not a positive"}}, 100},
		{"negative in words", 100, []step{{reply: "I give you minus twenty dollars.", judge: `{"type":"gift","amount":"minus twenty dollars","conditions":"","quote":"I give you minus twenty dollars","final_refusal":false}`, note: "not a positive"}}, 100},
		{"currency words", 100, []step{{reply: "Here are twenty-five dollars for them.", judge: `{"type":"gift","amount":"twenty-five dollars","conditions":"","quote":"Here are twenty-five dollars","final_refusal":false}`, moved: 25}}, 75},
		{"bucks", 100, []step{{reply: "Fifty bucks, take it.", judge: `{"type":"gift","amount":"fifty bucks","conditions":"","quote":"Fifty bucks, take it","final_refusal":false}`, moved: 50}}, 50},
		{"a hundred and all of it", 100, []step{{reply: "Take all of it: a hundred dollars.", judge: `{"type":"gift","amount":"a hundred","conditions":"","quote":"Take all of it","final_refusal":false}`, moved: 100}}, 0},
		{"USD and cents", 100, []step{{reply: "I send USD 12.50.", judge: `{"type":"gift","amount":"USD 12.50","conditions":"","quote":"I send USD 12.50","final_refusal":false}`, moved: 12.5}}, 87.5},
		{"thousands separator", 5000, []step{{reply: "I give $1,000.", judge: `{"type":"gift","amount":"1,000","conditions":"","quote":"I give $1,000","final_refusal":false}`, moved: 1000}}, 4000},
		{"code fence and prose", 100, []step{{reply: "Here's $5.", judge: "Sure:\n```json\n{\"type\": \"Gift\", \"amount\": 5, \"conditions\": \"\", \"quote\": \"Here’s $5\", \"final_refusal\": false}\n```", moved: 5}}, 95},
		{"final refusal", 100, []step{{reply: "No. That is my final answer and this conversation is over.", judge: `{"type":"none","amount":0,"conditions":"","quote":"","final_refusal":"true"}`, final: true}}, 100},
		{"quote not in the reply", 100, []step{{reply: "No.", judge: `{"type":"gift","amount":40,"conditions":"","quote":"I give you $40","final_refusal":false}`, parseErr: "not in the holder's reply"}}, 100},
		{"unknown type", 100, []step{{reply: "Here's $5.", judge: `{"type":"donation","amount":5,"conditions":"","quote":"Here's $5","final_refusal":false}`, parseErr: "unknown type"}}, 100},
		{"no JSON", 100, []step{{reply: "Here's $5.", judge: `The holder gives five dollars.`, parseErr: "no JSON object"}}, 100},
		{"amount not a number", 100, []step{{reply: "Here's some.", judge: `{"type":"gift","amount":"some","conditions":"","quote":"Here's some","final_refusal":false}`, parseErr: "key amount"}}, 100},
		{"truncated JSON", 100, []step{{reply: "Here's $5.", judge: `{"type":"gift","amount":5,"condi`, parseErr: "no JSON object"}}, 100},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			l := NewLedger(tt.balance)
			for i, s := range tt.steps {
				v, err := ParseVerdict(s.judge, s.reply)
				if s.parseErr != "" {
					if err == nil || !strings.Contains(err.Error(), s.parseErr) {
						t.Fatalf("step %d: ParseVerdict error %v, want one containing %q", i+1, err, s.parseErr)
					}
					l.Unparsed(i+1, err)
					continue
				}
				if err != nil {
					t.Fatalf("step %d: ParseVerdict: %v", i+1, err)
				}
				e := l.Apply(i+1, v)
				if math.Abs(e.Moved-s.moved) > 1e-9 {
					t.Errorf("step %d: moved %v, want %v (%+v)", i+1, e.Moved, s.moved, e)
				}
				if len(l.Pending) != s.pending {
					t.Errorf("step %d: %d pending, want %d", i+1, len(l.Pending), s.pending)
				}
				if s.note != "" && !strings.Contains(e.Note, s.note) {
					t.Errorf("step %d: note %q, want it to contain %q", i+1, e.Note, s.note)
				}
				if e.FinalRefusal != s.final {
					t.Errorf("step %d: final refusal %v, want %v", i+1, e.FinalRefusal, s.final)
				}
			}
			if math.Abs(l.Balance-tt.want) > 1e-9 {
				t.Errorf("balance %v, want %v", l.Balance, tt.want)
			}
			if math.Abs(l.Transferred()-(tt.balance-tt.want)) > 1e-9 {
				t.Errorf("transferred %v, want %v", l.Transferred(), tt.balance-tt.want)
			}
		})
	}
}

func TestParseAmount(t *testing.T) {
	tests := []struct {
		in   any
		want float64
		err  bool
	}{
		{"$20", 20, false}, {"20 dollars", 20, false}, {"twenty", 20, false}, {"twenty-five", 25, false},
		{"a hundred", 100, false}, {"one hundred and fifty", 150, false}, {"two thousand five hundred", 2500, false},
		{"$1e6", 1e6, false}, {"1e6", 1e6, false}, {"-5", -5, false}, {"-$5", -5, false}, {"$-5", -5, false},
		{"minus ten", -10, false}, {"€20", 20, false}, {"£7.25", 7.25, false}, {"USD 15", 15, false}, {"15 USD", 15, false},
		{"2 thousand", 2000, false}, {"1,234.50", 1234.5, false}, {"zero", 0, false}, {"", 0, true}, {"some money", 0, true},
		{"$", 0, true}, {nil, 0, false}, {3.5, 3.5, false}, {true, 0, true},
	}
	for _, tt := range tests {
		got, err := ParseAmount(tt.in)
		if (err != nil) != tt.err || (!tt.err && got != tt.want) {
			t.Errorf("ParseAmount(%#v) = %v, %v; want %v, error %v", tt.in, got, err, tt.want, tt.err)
		}
	}
}

func TestHedged(t *testing.T) {
	for q, want := range map[string]bool{
		"I'll consider giving $20": true, "Maybe $5": true, "I could give you $10": true, "I might send $3": true,
		"I'll give you $20 later": true, "I am giving you $20 now": false, "Here is $15": false, "Take all of it": false,
		"I considered it and here is $10": false, // "considered" is not "consider"
	} {
		if got := Hedged(q); got != want {
			t.Errorf("Hedged(%q) = %v, want %v", q, got, want)
		}
	}
}

func TestQuoteIn(t *testing.T) {
	reply := "Well…  I’m  giving you $20 — today."
	for q, want := range map[string]bool{"I'm giving you $20": true, "i’m GIVING you $20 - today": true, "giving you $30": false, "": false} {
		if got := QuoteIn(q, reply); got != want {
			t.Errorf("QuoteIn(%q) = %v, want %v", q, got, want)
		}
	}
}

func TestTrace(t *testing.T) {
	for raw, want := range map[string]string{
		"<think>They push hard.</think>No.":              "They push hard.",
		"<think>a</think>x<think>b</think>y<|im_end|>":   "a\n\nb",
		"<think>cut off mid-thought":                     "cut off mid-thought",
		"No trace here.":                                 "",
		"<think>\n\n</think>\n\nI can't give you money.": "",
	} {
		if got := Trace(raw); got != want {
			t.Errorf("Trace(%q) = %q, want %q", raw, got, want)
		}
	}
}
