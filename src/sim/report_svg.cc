#include "sim/report_svg.h"

#include <algorithm>
#include <cstdio>

namespace gpupool {
namespace {

std::string Num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f", v);
  return buf;
}

std::string Escape(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '<') out += "&lt;";
    else if (c == '>') out += "&gt;";
    else if (c == '&') out += "&amp;";
    else out += c;
  }
  return out;
}

}  // namespace

std::string SvgDocument(int width, int height, const std::string& body) {
  return "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" + std::to_string(width) +
         "\" height=\"" + std::to_string(height) + "\" font-family=\"sans-serif\" font-size=\"12\">\n" +
         "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n" + body + "</svg>\n";
}

std::string LinePlot(const PlotSpec& spec, const std::vector<Series>& series, int x0, int y0,
                     int width, int height) {
  const int left = x0 + 60, right = x0 + width - 20, top = y0 + 30, bottom = y0 + height - 45;
  const double xs = spec.x_max > spec.x_min ? (right - left) / (spec.x_max - spec.x_min) : 1;
  const double ys = spec.y_max > spec.y_min ? (bottom - top) / (spec.y_max - spec.y_min) : 1;
  auto px = [&](double x) { return left + (x - spec.x_min) * xs; };
  auto py = [&](double y) { return bottom - (std::clamp(y, spec.y_min, spec.y_max) - spec.y_min) * ys; };
  std::string out;
  out += "<text x=\"" + Num((left + right) / 2.0) + "\" y=\"" + Num(y0 + 18) +
         "\" text-anchor=\"middle\" font-size=\"14\">" + Escape(spec.title) + "</text>\n";
  out += "<line x1=\"" + Num(left) + "\" y1=\"" + Num(bottom) + "\" x2=\"" + Num(right) + "\" y2=\"" +
         Num(bottom) + "\" stroke=\"black\"/>\n";
  out += "<line x1=\"" + Num(left) + "\" y1=\"" + Num(top) + "\" x2=\"" + Num(left) + "\" y2=\"" +
         Num(bottom) + "\" stroke=\"black\"/>\n";
  for (int i = 0; i <= 4; ++i) {
    const double xv = spec.x_min + (spec.x_max - spec.x_min) * i / 4;
    const double yv = spec.y_min + (spec.y_max - spec.y_min) * i / 4;
    out += "<text x=\"" + Num(px(xv)) + "\" y=\"" + Num(bottom + 16) + "\" text-anchor=\"middle\">" +
           Num(xv) + "</text>\n";
    out += "<text x=\"" + Num(left - 6) + "\" y=\"" + Num(py(yv) + 4) + "\" text-anchor=\"end\">" +
           Num(yv) + "</text>\n";
    out += "<line x1=\"" + Num(left) + "\" y1=\"" + Num(py(yv)) + "\" x2=\"" + Num(right) + "\" y2=\"" +
           Num(py(yv)) + "\" stroke=\"#dddddd\"/>\n";
  }
  out += "<text x=\"" + Num((left + right) / 2.0) + "\" y=\"" + Num(bottom + 34) +
         "\" text-anchor=\"middle\">" + Escape(spec.x_label) + "</text>\n";
  out += "<text x=\"" + Num(x0 + 14) + "\" y=\"" + Num((top + bottom) / 2.0) +
         "\" text-anchor=\"middle\" transform=\"rotate(-90 " + Num(x0 + 14) + " " +
         Num((top + bottom) / 2.0) + ")\">" + Escape(spec.y_label) + "</text>\n";
  int legend = 0;
  for (const Series& s : series) {
    std::string pts;
    for (const auto& [x, y] : s.points) pts += Num(px(x)) + "," + Num(py(y)) + " ";
    out += "<polyline fill=\"none\" stroke=\"" + s.color + "\" stroke-width=\"1.5\" points=\"" + pts +
           "\"/>\n";
    const double ly = spec.legend_low ? bottom - 12 - 16 * (static_cast<double>(series.size()) - 1 - legend++)
                                      : top + 4 + 16 * legend++;
    out += "<line x1=\"" + Num(right - 150) + "\" y1=\"" + Num(ly) + "\" x2=\"" + Num(right - 130) +
           "\" y2=\"" + Num(ly) + "\" stroke=\"" + s.color + "\" stroke-width=\"3\"/>\n";
    out += "<text x=\"" + Num(right - 125) + "\" y=\"" + Num(ly + 4) + "\">" + Escape(s.name) + "</text>\n";
  }
  return out;
}

std::string ReplaySvg(const ReplayReport& r) {
  Series util{"utilisation %", "#1f77b4", {}}, queue{"jobs queued", "#d62728", {}};
  double max_q = 1, max_t = 1;
  for (const ReplaySample& s : r.timeline) {
    util.points.push_back({s.t_s / 86400, s.utilization_pct});
    queue.points.push_back({s.t_s / 86400, static_cast<double>(s.queued)});
    max_q = std::max(max_q, static_cast<double>(s.queued));
    max_t = std::max(max_t, s.t_s / 86400);
  }
  std::string body = LinePlot({"GPU utilisation", "time (days)", "% of capacity", 0, max_t, 0, 100},
                              {util}, 0, 0, 800, 300);
  body += LinePlot({"Queue length", "time (days)", "pending jobs", 0, max_t, 0, max_q}, {queue}, 0, 300,
                   800, 300);
  return SvgDocument(800, 600, body);
}

}  // namespace gpupool
