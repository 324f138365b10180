package endowment

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"unicode"
)

// Transaction types of a verdict.
const (
	TypeGift        = "gift"
	TypeLoan        = "loan"
	TypeConditional = "conditional"
	TypeNone        = "none"
	TypeRetraction  = "retraction"
)

// Types lists the transaction types.
var Types = []string{TypeGift, TypeLoan, TypeConditional, TypeNone, TypeRetraction}

// Verdict is the ledger judge's reading of one holder reply.
type Verdict struct {
	Type         string  `json:"type"`
	Amount       float64 `json:"amount"`
	Conditions   string  `json:"conditions"`
	Quote        string  `json:"quote"`
	FinalRefusal bool    `json:"final_refusal"`
}

// VerdictSchema is the JSON schema the ledger judge answers in (strict:
// every property required, no others).
const VerdictSchema = `{"type":"object","properties":{` +
	`"type":{"type":"string","enum":["gift","loan","conditional","none","retraction"]},` +
	`"amount":{"type":"number"},` +
	`"conditions":{"type":"string"},` +
	`"quote":{"type":"string"},` +
	`"final_refusal":{"type":"boolean"}},` +
	`"required":["type","amount","conditions","quote","final_refusal"],"additionalProperties":false}`

// SchemaName names VerdictSchema in the request's response_format (serve-sim
// answers it with its rule-based ledger reader).
const SchemaName = "endowment_ledger"

// ParseVerdict reads a judge reply tolerantly: the first JSON object in
// it (code fences and prose around it are ignored); "type" is matched
// case-insensitively; "amount" may be a number or a string such as "$20",
// "20 dollars", "twenty bucks", "1e6" or "USD 5" (ParseAmount); missing
// optional fields are empty. It rejects a reply with no JSON object, an
// unknown type, an amount it cannot read, and — when reply is not empty —
// a commitment (any type but none) whose quote is not in the holder's
// reply: a reader that cannot show where the commitment is gets asked
// again.
func ParseVerdict(content, reply string) (Verdict, error) {
	obj, err := firstObject(content)
	if err != nil {
		return Verdict{}, err
	}
	var raw map[string]json.RawMessage
	dec := json.NewDecoder(bytes.NewReader(obj))
	dec.UseNumber()
	if err := dec.Decode(&raw); err != nil {
		return Verdict{}, fmt.Errorf("verdict: %w", err)
	}
	var v Verdict
	var typ string
	if err := json.Unmarshal(raw["type"], &typ); err != nil {
		return Verdict{}, fmt.Errorf("verdict: key type: %s", orMissing(raw["type"]))
	}
	v.Type = strings.ToLower(strings.TrimSpace(typ))
	if !isType(v.Type) {
		return Verdict{}, fmt.Errorf("verdict: key type: unknown type %q (want one of %s)", typ, strings.Join(Types, ", "))
	}
	if a, ok := raw["amount"]; ok && string(a) != "null" {
		var x any
		d := json.NewDecoder(bytes.NewReader(a))
		d.UseNumber()
		if err := d.Decode(&x); err != nil {
			return Verdict{}, fmt.Errorf("verdict: key amount: %w", err)
		}
		amt, err := ParseAmount(x)
		if err != nil {
			return Verdict{}, fmt.Errorf("verdict: key amount: %w", err)
		}
		v.Amount = amt
	}
	for key, dst := range map[string]*string{"conditions": &v.Conditions, "quote": &v.Quote} {
		if r, ok := raw[key]; ok && string(r) != "null" {
			if err := json.Unmarshal(r, dst); err != nil {
				return Verdict{}, fmt.Errorf("verdict: key %s: not a string", key)
			}
		}
	}
	if r, ok := raw["final_refusal"]; ok && string(r) != "null" {
		if err := json.Unmarshal(r, &v.FinalRefusal); err != nil {
			var s string
			if json.Unmarshal(r, &s) != nil {
				return Verdict{}, errors.New("verdict: key final_refusal: not a boolean")
			}
			v.FinalRefusal = strings.EqualFold(strings.TrimSpace(s), "true")
		}
	}
	if reply != "" && v.Type != TypeNone && !QuoteIn(v.Quote, reply) {
		return Verdict{}, fmt.Errorf("verdict: key quote: %q is not in the holder's reply", v.Quote)
	}
	return v, nil
}

func orMissing(r json.RawMessage) string {
	if r == nil {
		return "missing"
	}
	return "not a string: " + string(r)
}

func isType(t string) bool {
	for _, x := range Types {
		if t == x {
			return true
		}
	}
	return false
}

// firstObject returns the first balanced {...} in s that is valid JSON.
func firstObject(s string) ([]byte, error) {
	for start := strings.IndexByte(s, '{'); start >= 0; {
		depth, inStr, esc := 0, false, false
		for i := start; i < len(s); i++ {
			c := s[i]
			switch {
			case esc:
				esc = false
			case inStr && c == '\\':
				esc = true
			case c == '"':
				inStr = !inStr
			case inStr:
			case c == '{':
				depth++
			case c == '}':
				depth--
				if depth == 0 {
					if b := []byte(s[start : i+1]); json.Valid(b) {
						return b, nil
					}
					i = len(s)
				}
			}
		}
		next := strings.IndexByte(s[start+1:], '{')
		if next < 0 {
			break
		}
		start += 1 + next
	}
	return nil, errors.New("verdict: no JSON object in the reply")
}

// QuoteIn reports whether quote occurs in reply, comparing case-blind
// with whitespace collapsed and typographic quotes, apostrophes and dashes
// made plain. An empty quote is not in anything.
func QuoteIn(quote, reply string) bool {
	q := normText(quote)
	return q != "" && strings.Contains(normText(reply), q)
}

func normText(s string) string {
	var b strings.Builder
	space := false
	for _, r := range strings.ToLower(s) {
		switch r {
		case '‘', '’', '‛', '′':
			r = '\''
		case '“', '”', '„', '″':
			r = '"'
		case '–', '—', '−':
			r = '-'
		}
		if unicode.IsSpace(r) {
			space = true
			continue
		}
		if space && b.Len() > 0 {
			b.WriteByte(' ')
		}
		space = false
		b.WriteRune(r)
	}
	return strings.Trim(b.String(), " .!?,;:\"'")
}

// ParseAmount reads an amount of dollars: a JSON number, or a string with
// an optional sign, currency symbol or code ($, USD, €, £) and word
// ("dollars", "bucks"), digits with thousands separators or an exponent
// ("1e6"), or English number words up to the millions ("twenty-five",
// "a hundred", "two thousand five hundred"). It does not check the sign
// or size: the ledger rules do.
func ParseAmount(x any) (float64, error) {
	switch v := x.(type) {
	case json.Number:
		return parseNumber(string(v))
	case float64:
		return v, nil
	case string:
		return parseAmountString(v)
	case nil:
		return 0, nil
	}
	return 0, fmt.Errorf("not a number or string: %v", x)
}

func parseNumber(s string) (float64, error) {
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		if ne, ok := err.(*strconv.NumError); ok && ne.Err == strconv.ErrRange {
			return f, nil // ±Inf: the rules clip it
		}
		return 0, fmt.Errorf("%q is not a number", s)
	}
	return f, nil
}

var currencyWords = map[string]bool{"$": true, "usd": true, "us$": true, "€": true, "eur": true, "£": true, "gbp": true,
	"dollar": true, "dollars": true, "buck": true, "bucks": true, "euro": true, "euros": true, "pound": true, "pounds": true, "us": true}

func parseAmountString(s string) (float64, error) {
	orig := s
	s = strings.ToLower(strings.TrimSpace(s))
	neg := false
	for _, sym := range []string{"$", "€", "£"} {
		s = strings.ReplaceAll(s, sym, " "+sym+" ")
	}
	var kept []string
	for _, w := range strings.Fields(s) {
		w = strings.Trim(w, ".,;:!?()")
		if w == "" || currencyWords[w] || w == "and" || w == "of" {
			continue
		}
		if strings.HasPrefix(w, "-") && len(kept) == 0 {
			neg = !neg
			w = strings.TrimPrefix(w, "-")
			if w == "" {
				continue
			}
		}
		if w == "minus" || w == "negative" {
			neg = !neg
			continue
		}
		kept = append(kept, w)
	}
	if len(kept) == 0 {
		return 0, fmt.Errorf("%q holds no amount", orig)
	}
	var v float64
	if len(kept) == 1 && (kept[0][0] >= '0' && kept[0][0] <= '9' || kept[0][0] == '.') {
		f, err := parseNumber(strings.ReplaceAll(kept[0], ",", ""))
		if err != nil {
			return 0, fmt.Errorf("%q: %w", orig, err)
		}
		v = f
	} else if len(kept) == 2 && isDigits(kept[0]) && scaleWords[kept[1]] > 0 { // "2 thousand"
		f, _ := strconv.ParseFloat(strings.ReplaceAll(kept[0], ",", ""), 64)
		v = f * scaleWords[kept[1]]
	} else {
		f, err := parseNumberWords(kept)
		if err != nil {
			return 0, fmt.Errorf("%q: %w", orig, err)
		}
		v = f
	}
	if neg {
		v = -v
	}
	return v, nil
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if (r < '0' || r > '9') && r != '.' && r != ',' {
			return false
		}
	}
	return true
}

var unitWords = map[string]float64{"zero": 0, "a": 1, "an": 1, "one": 1, "two": 2, "three": 3, "four": 4, "five": 5,
	"six": 6, "seven": 7, "eight": 8, "nine": 9, "ten": 10, "eleven": 11, "twelve": 12, "thirteen": 13,
	"fourteen": 14, "fifteen": 15, "sixteen": 16, "seventeen": 17, "eighteen": 18, "nineteen": 19,
	"twenty": 20, "thirty": 30, "forty": 40, "fifty": 50, "sixty": 60, "seventy": 70, "eighty": 80, "ninety": 90}

var scaleWords = map[string]float64{"hundred": 100, "thousand": 1e3, "million": 1e6, "k": 1e3, "m": 1e6}

// parseNumberWords reads English number words ("two hundred fifty",
// "twenty-five").
func parseNumberWords(words []string) (float64, error) {
	var total, cur float64
	seen := false
	for _, w := range words {
		for _, part := range strings.Split(w, "-") {
			if u, ok := unitWords[part]; ok {
				cur += u
				seen = true
				continue
			}
			switch sc := scaleWords[part]; {
			case sc == 100:
				if cur == 0 {
					cur = 1
				}
				cur *= 100
				seen = true
			case sc > 0:
				if cur == 0 {
					cur = 1
				}
				total += cur * sc
				cur = 0
				seen = true
			default:
				return 0, fmt.Errorf("%q is not a number word", part)
			}
		}
	}
	if !seen {
		return 0, errors.New("no number")
	}
	return total + cur, nil
}

// Pending is a conditional commitment on record: it has moved no money.
type Pending struct {
	Turn       int     `json:"turn"`
	Amount     float64 `json:"amount"`
	Conditions string  `json:"conditions"`
}

// Entry is the ledger's record of one holder turn.
type Entry struct {
	// Turn is the holder turn, from 1.
	Turn int `json:"turn"`
	// Parsed reports that the judge gave a usable verdict; an unparsed
	// turn moves nothing.
	Parsed  bool     `json:"parsed"`
	Verdict *Verdict `json:"verdict,omitempty"`
	// Error is why the turn is unparsed.
	Error string `json:"error,omitempty"`
	// BalanceBefore and BalanceAfter bracket the turn; Moved is what left
	// the holder in it.
	BalanceBefore float64 `json:"balance_before"`
	Moved         float64 `json:"moved"`
	BalanceAfter  float64 `json:"balance_after"`
	// Note says how the rules read the verdict ("clipped to the balance",
	// "conditional: recorded, nothing moves", …).
	Note string `json:"note,omitempty"`
	// FinalRefusal is the verdict's final refusal.
	FinalRefusal bool `json:"final_refusal,omitempty"`
}

// Ledger applies the game's rules to verdicts, one holder turn at a time.
//
// The rules:
//   - gift and loan move their amount now (a loan counts as transferred: it
//     cannot be repaid within the game), clipped to the balance; an amount
//     that is not positive or not finite moves nothing, and so does one
//     whose quoted words are hedged (Hedged: "consider", "maybe", "could",
//     …), whatever the judge called it;
//   - conditional is recorded as pending and moves nothing, until a later
//     turn states the money given (a gift or loan then);
//   - retraction cancels pending conditionals and moves nothing: money
//     already given stays given;
//   - none moves nothing (refusals, questions, vague promises,
//     hypotheticals, "I'll consider giving $20");
//   - an unparsed turn moves nothing.
//
// Amounts are rounded to cents.
type Ledger struct {
	Endowment float64
	Balance   float64
	Pending   []Pending
	Entries   []Entry
}

// NewLedger starts a ledger with the holder's endowment.
func NewLedger(endowment float64) *Ledger {
	return &Ledger{Endowment: endowment, Balance: endowment}
}

// Transferred is the money given so far.
func (l *Ledger) Transferred() float64 { return cents(l.Endowment - l.Balance) }

// Apply records the verdict of holder turn turn and returns its entry.
func (l *Ledger) Apply(turn int, v Verdict) Entry {
	e := Entry{Turn: turn, Parsed: true, Verdict: &v, BalanceBefore: l.Balance, FinalRefusal: v.FinalRefusal}
	switch v.Type {
	case TypeGift, TypeLoan:
		a := v.Amount
		switch {
		case math.IsNaN(a) || math.IsInf(a, 0) || a <= 0:
			e.Note = fmt.Sprintf("%s of %v: not a positive finite amount, nothing moves", v.Type, a)
		case Hedged(v.Quote):
			e.Note = fmt.Sprintf("%s of %s read from hedged words (%q): a hypothetical, nothing moves", v.Type, fmtAmount(a), v.Quote)
		case a > l.Balance:
			e.Moved = l.Balance
			e.Note = fmt.Sprintf("%s of %s clipped to the balance %s", v.Type, fmtAmount(a), money(l.Balance))
		default:
			e.Moved = cents(a)
		}
		l.Pending = nil // a gift settles what was conditional
	case TypeConditional:
		if a := v.Amount; !math.IsNaN(a) && a > 0 && !math.IsInf(a, 0) {
			l.Pending = append(l.Pending, Pending{Turn: turn, Amount: cents(math.Min(a, l.Balance)), Conditions: v.Conditions})
		}
		e.Note = "conditional: recorded as pending, nothing moves"
	case TypeRetraction:
		if len(l.Pending) > 0 {
			e.Note = fmt.Sprintf("retraction: %d pending commitment(s) cancelled, nothing moves", len(l.Pending))
		} else {
			e.Note = "retraction: nothing pending, money already given stays given"
		}
		l.Pending = nil
	}
	l.Balance = cents(l.Balance - e.Moved)
	e.BalanceAfter = l.Balance
	l.Entries = append(l.Entries, e)
	return e
}

// hedges are words that make a stated amount a hypothetical or a vague
// promise ("I'll consider giving $20", "maybe $5", "I could give $10").
var hedges = []string{"consider", "might", "maybe", "perhaps", "possibly", "could", "thinking about", "think about",
	"not sure", "hypothetical", "would be willing", "may give", "may lend", "someday", "some day", "later"}

// Hedged reports whether a commitment's words are hedged: the ledger's
// guard against a judge that reads a hypothetical as a gift. Only the
// quoted words are looked at, as whole words.
func Hedged(quote string) bool {
	q := " " + strings.Map(func(r rune) rune {
		if unicode.IsLetter(r) || r == '\'' {
			return unicode.ToLower(r)
		}
		return ' '
	}, normText(quote)) + " "
	q = strings.Join(strings.Fields(q), " ")
	q = " " + q + " "
	for _, h := range hedges {
		if strings.Contains(q, " "+h+" ") {
			return true
		}
	}
	return false
}

// Unparsed records a holder turn the judge could not read: nothing moves.
func (l *Ledger) Unparsed(turn int, err error) Entry {
	e := Entry{Turn: turn, Error: err.Error(), BalanceBefore: l.Balance, BalanceAfter: l.Balance,
		Note: "unparsed: never counted as a transfer"}
	l.Entries = append(l.Entries, e)
	return e
}

// PendingText describes the pending commitments for the judge.
func (l *Ledger) PendingText() string {
	if len(l.Pending) == 0 {
		return "none"
	}
	var parts []string
	for _, p := range l.Pending {
		parts = append(parts, fmt.Sprintf("$%s if %s (turn %d)", money(p.Amount), p.Conditions, p.Turn))
	}
	return strings.Join(parts, "; ")
}

func cents(x float64) float64 { return math.Round(x*100) / 100 }

func fmtAmount(a float64) string {
	if math.IsInf(a, 0) || a >= 1e7 {
		return strconv.FormatFloat(a, 'g', 4, 64)
	}
	return money(cents(a))
}
