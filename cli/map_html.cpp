// ggufkit map --html: one self-contained page (inline CSS and a few lines of inline
// script, nothing fetched) drawing every span of each file to scale, its name on hover.
#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>

#include "commands.h"
#include "ggufkit/jinja_render.h"
#include "common.h"

namespace ggufkit::cli {

namespace {

std::string bytes_text(uint64_t n) {
  char b[64];
  if (n < 10000) std::snprintf(b, sizeof b, "%llu bytes", static_cast<unsigned long long>(n));
  else if (n < 10000000) std::snprintf(b, sizeof b, "%.1f kB", static_cast<double>(n) / 1e3);
  else if (n < 10000000000ull) std::snprintf(b, sizeof b, "%.1f MB", static_cast<double>(n) / 1e6);
  else std::snprintf(b, sizeof b, "%.2f GB", static_cast<double>(n) / 1e9);
  return b;
}

// A kind's colour: the header's fields in cool tones, the data in warm ones, filler grey.
const char* colour(SpanKind k) {
  switch (k) {
    case SpanKind::magic: case SpanKind::version: case SpanKind::tensor_count: case SpanKind::kv_count: return "#4c566a";
    case SpanKind::kv_key: return "#5e81ac";
    case SpanKind::kv_type: return "#88c0d0";
    case SpanKind::kv_value: case SpanKind::metadata: return "#81a1c1";
    case SpanKind::tensor_info: case SpanKind::infos: return "#a3be8c";
    case SpanKind::tensor_data: case SpanKind::data: return "#d08770";
    case SpanKind::gap: case SpanKind::trailing: return "#bf616a";
    default: return "#d8dee9";  // padding
  }
}

constexpr unsigned kRows = 32;        // the file wraps over this many rows
constexpr unsigned kWidth = 1000;     // of this many units each
constexpr double kRowHeight = 12, kRowGap = 3;

// The spans of [from, to) of a file, wrapped over kRows rows: each span one <g class="span">
// holding a rect per row it crosses (a span too small to see still gets its hairline).
void draw(std::ostream& out, const Layout& L, uint64_t from, uint64_t to, const char* id) {
  const double per_unit = static_cast<double>(std::max<uint64_t>(to - from, 1)) / (kRows * kWidth);
  out << "<svg id=\"" << id << "\" viewBox=\"0 0 " << kWidth << " " << kRows * (kRowHeight + kRowGap)
      << "\" preserveAspectRatio=\"none\" role=\"img\">\n";
  size_t n = 0;
  for (const LabeledSpan& s : L.spans) {
    if (s.span.offset < from || s.span.offset > to || (s.span.offset == to && s.span.size > 0)) continue;  // an empty span at the end too
    const double a = static_cast<double>(std::max(s.span.offset, from) - from) / per_unit;
    const double b = static_cast<double>(std::min(s.span.end(), to) - from) / per_unit;
    out << "<g class=\"span" << (n++ % 2 ? " odd" : "") << "\" data-kind=\"" << span_kind_name(s.kind) << "\" data-offset=\"" << s.span.offset << "\" data-size=\""
        << s.span.size << "\" fill=\"" << colour(s.kind) << "\"><title>" << jinja::html_escape(s.path.empty() ? span_kind_name(s.kind) : s.path)
        << "\n" << span_kind_name(s.kind) << ", " << bytes_text(s.span.size) << " at byte " << s.span.offset << "</title>";
    const unsigned first = std::min<unsigned>(static_cast<unsigned>(a / kWidth), kRows - 1);
    const unsigned last = b > a ? std::min<unsigned>(static_cast<unsigned>((b - 1e-9) / kWidth), kRows - 1) : first;
    for (unsigned row = first; row <= last; ++row) {  // a piece a row
      const double x0 = std::max(a, row * 1.0 * kWidth), x1 = std::min(b, (row + 1.0) * kWidth);
      char r[160];
      std::snprintf(r, sizeof r, "<rect x=\"%.3f\" y=\"%.1f\" width=\"%.3f\" height=\"%.0f\"/>", x0 - row * 1.0 * kWidth,
                    row * (kRowHeight + kRowGap), std::max(x1 - x0, 0.5), kRowHeight);
      out << r;
    }
    out << "</g>\n";
  }
  out << "</svg>\n";
}

}  // namespace

std::string map_html(const std::vector<MapFile>& files) {
  std::ostringstream out;
  out << "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n<title>ggufkit map: "
      << jinja::html_escape(files.empty() ? "" : files[0].name) << "</title>\n"
      << "<style>\nbody{font:14px system-ui,sans-serif;margin:24px;color:#2e3440;background:#fff}\n"
         "h1{font-size:18px}h2{font-size:15px;margin-top:28px}svg{width:100%;height:"
      << kRows * (kRowHeight + kRowGap) * 0.9
      << "px;display:block;border:1px solid #d8dee9}\n"
         "g.odd{fill-opacity:.8}g.span:hover{fill:#ebcb8b;fill-opacity:1}table{border-collapse:collapse;margin-top:8px}"
         "td,th{padding:2px 10px;text-align:right}td:first-child,th:first-child{text-align:left}\n"
         ".key{display:inline-block;width:12px;height:12px;margin-right:6px;vertical-align:-1px}\n"
         "#hover{min-height:1.4em;font-family:monospace;white-space:pre}\n</style></head><body>\n";
  out << "<h1>ggufkit map</h1>\n<p id=\"hover\">hover over a span for its name</p>\n";
  size_t index = 0;
  for (const MapFile& f : files) {
    const Layout& L = f.layout;
    std::map<std::string, std::pair<uint64_t, uint64_t>> by_kind;  // spans, bytes
    std::map<std::string, const char*> colours;
    for (const LabeledSpan& s : L.spans) {
      auto& k = by_kind[span_kind_name(s.kind)];
      k.first++, k.second += s.span.size;
      colours[span_kind_name(s.kind)] = colour(s.kind);
    }
    const std::string id = "file" + (index ? std::to_string(index) : std::string());
    out << "<section class=\"file\" data-file-size=\"" << f.file_size << "\" data-spans=\"" << L.spans.size() << "\">\n<h2>"
        << jinja::html_escape(f.name) << "</h2>\n<p>file size <b class=\"file-size\">" << f.file_size << "</b> bytes (" << bytes_text(f.file_size)
        << "), " << L.spans.size() << " spans; alignment " << L.alignment << ", data from byte " << L.data_offset
        << "; the whole file in " << kRows << " rows of " << bytes_text((std::max(f.file_size, L.file_size) + kRows - 1) / kRows)
        << ", left to right and top to bottom:</p>\n";
    draw(out, L, 0, std::max(f.file_size, L.file_size), id.c_str());
    if (L.data_offset > 0 && L.data_offset < L.file_size) {
      out << "<p>the header alone (bytes 0 to " << L.data_offset << "), to its own scale:</p>\n";
      draw(out, L, 0, L.data_offset, (id + "-header").c_str());
    }
    out << "<table><tr><th>kind</th><th>spans</th><th>bytes</th><th>share</th></tr>\n";
    for (const auto& [kind, n] : by_kind) {
      char share[32];
      std::snprintf(share, sizeof share, "%.2f%%", f.file_size ? 100.0 * static_cast<double>(n.second) / static_cast<double>(f.file_size) : 0.0);
      out << "<tr><td><span class=\"key\" style=\"background:" << colours[kind] << "\"></span>" << kind << "</td><td>" << n.first
          << "</td><td>" << n.second << "</td><td>" << share << "</td></tr>\n";
    }
    out << "</table>\n</section>\n";
    ++index;
  }
  // The count the page shows is the browser's own, of the spans it drew: a check that every
  // span reached the DOM. Hovering names a span below the title as well as in its tooltip.
  out << "<p>drawn: <span id=\"drawn\"></span></p>\n<script>\n"
         "for (const s of document.querySelectorAll('section.file')) {\n"
         "  const svg = s.querySelector('svg');\n"
         "  s.dataset.drawn = svg.querySelectorAll('g.span').length;\n"
         "}\n"
         "document.getElementById('drawn').textContent = [...document.querySelectorAll('section.file')]\n"
         "  .map(s => s.dataset.drawn + ' spans of ' + s.dataset.fileSize + ' bytes').join('; ');\n"
         "for (const g of document.querySelectorAll('g.span'))\n"
         "  g.addEventListener('mouseenter', () => { document.getElementById('hover').textContent = g.querySelector('title').textContent; });\n"
         "</script>\n</body></html>\n";
  return out.str();
}

}  // namespace ggufkit::cli
