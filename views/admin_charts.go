package views

import (
	"math"
	"strconv"
)

// ChartVM is a bar chart drawn as SVG on the server, with a table of the
// same numbers beside it for those who cannot see it.
type ChartVM struct {
	ID    string // prefix of element ids
	Title string
	// Desc says in words what the chart shows, and its headline numbers.
	Desc string
	// CategoryHeader heads the table's first column, such as "Hour (UTC)".
	CategoryHeader string
	Categories     []string
	Series         []SeriesVM
	// Stacked stacks the series in one bar per category; otherwise their
	// bars stand side by side.
	Stacked bool
	// Unit follows each value in the table, such as "%".
	Unit string
	// ZeroRowsNote, when set, leaves the categories with nothing out of the
	// table (for charts of many categories, mostly empty) and says so.
	ZeroRowsNote string
}

// SeriesVM is one series of a chart: a value per category.
type SeriesVM struct {
	Name   string
	Class  string // colours the bars and the legend's swatch
	Values []float64
}

// The chart's drawing area, in SVG units.
const (
	chartW, chartH                     = 640.0, 240.0
	padLeft, padRight, padTop, padDown = 44.0, 8.0, 10.0, 34.0
)

func (c ChartVM) viewBox() string { return "0 0 " + num(chartW) + " " + num(chartH) }

// top is the value at the top of the axis: a round number above every bar.
func (c ChartVM) top() float64 {
	highest := 0.0
	for i := range c.Categories {
		sum := 0.0
		for _, s := range c.Series {
			v := s.Values[i]
			if c.Stacked {
				sum += v
			} else {
				sum = math.Max(sum, v)
			}
		}
		highest = math.Max(highest, sum)
	}
	if highest <= 0 {
		return 1
	}
	mag := math.Pow(10, math.Floor(math.Log10(highest)))
	for _, step := range []float64{1, 2, 5, 10} {
		if step*mag >= highest {
			return step * mag
		}
	}
	return 10 * mag
}

// Empty reports whether every value is zero.
func (c ChartVM) Empty() bool {
	for _, s := range c.Series {
		for _, v := range s.Values {
			if v != 0 {
				return false
			}
		}
	}
	return true
}

// BarVM is one rectangle of a chart.
type BarVM struct {
	X, Y, W, H string
	Class      string
	Label      string
}

func (c ChartVM) bars() []BarVM {
	if len(c.Categories) == 0 {
		return nil
	}
	plotW, plotH := chartW-padLeft-padRight, chartH-padTop-padDown
	slot := plotW / float64(len(c.Categories))
	gap := math.Min(slot*0.2, 8)
	// A bar wider than this says nothing more, however few the categories.
	w := math.Min(slot-gap, 48*float64(max(1, len(c.Series)*boolInt(!c.Stacked))))
	top := c.top()
	var out []BarVM
	for i, cat := range c.Categories {
		x := padLeft + float64(i)*slot + (slot-w)/2
		base := chartH - padDown
		for j, s := range c.Series {
			v := s.Values[i]
			h := v / top * plotH
			bx, bw := x, w
			if !c.Stacked {
				bw = w / float64(len(c.Series))
				bx = x + float64(j)*bw
			}
			if v > 0 {
				out = append(out, BarVM{
					X: num(bx), Y: num(base - h), W: num(bw), H: num(h), Class: "bar " + s.Class,
					Label: cat + ", " + s.Name + ": " + fmtValue(v) + c.Unit,
				})
			}
			if c.Stacked {
				base -= h
			}
		}
	}
	return out
}

// TickVM is a horizontal grid line with its value.
type TickVM struct {
	Y     string
	Label string
}

func (c ChartVM) ticks() []TickVM {
	top := c.top()
	plotH := chartH - padTop - padDown
	var out []TickVM
	for _, f := range []float64{0, 0.5, 1} {
		out = append(out, TickVM{Y: num(chartH - padDown - f*plotH), Label: fmtValue(f*top) + c.Unit})
	}
	return out
}

// XLabelVM is a category's label under the axis.
type XLabelVM struct {
	X     string
	Label string
}

// xLabels labels the categories, every few when there are many.
func (c ChartVM) xLabels() []XLabelVM {
	n := len(c.Categories)
	if n == 0 {
		return nil
	}
	slot := (chartW - padLeft - padRight) / float64(n)
	every := max(1, n/8)
	var out []XLabelVM
	for i := 0; i < n; i += every {
		out = append(out, XLabelVM{X: num(padLeft + (float64(i)+0.5)*slot), Label: c.Categories[i]})
	}
	return out
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// tableRows are the indexes of the categories the table lists.
func (c ChartVM) tableRows() []int {
	var out []int
	for i := range c.Categories {
		if c.ZeroRowsNote != "" && c.rowSum(i) == 0 {
			continue
		}
		out = append(out, i)
	}
	return out
}

func (c ChartVM) rowSum(i int) float64 {
	sum := 0.0
	for _, s := range c.Series {
		sum += s.Values[i]
	}
	return sum
}

// rowTotal sums a category's values, for a stacked chart's table.
func (c ChartVM) rowTotal(i int) string { return fmtValue(c.rowSum(i)) + c.Unit }

func (c ChartVM) cell(s SeriesVM, i int) string { return fmtValue(s.Values[i]) + c.Unit }

// Chart coordinates.
func (c ChartVM) axisLeft() string  { return num(padLeft) }
func (c ChartVM) axisRight() string { return num(chartW - padRight) }
func (c ChartVM) labelY() string    { return num(chartH - padDown + 16) }
func (c ChartVM) tickX() string     { return num(padLeft - 6) }
func (c ChartVM) middleX() string   { return num(chartW / 2) }
func (c ChartVM) middleY() string   { return num(chartH / 2) }

func num(f float64) string { return strconv.FormatFloat(f, 'f', 1, 64) }

// fmtValue shows a whole number without decimals, others with one.
func fmtValue(f float64) string {
	if f == math.Trunc(f) {
		return strconv.FormatFloat(f, 'f', 0, 64)
	}
	return strconv.FormatFloat(f, 'f', 1, 64)
}
