// SVG line plots for simulation reports: self-contained files, no scripts, fixed formatting so
// the same report gives the same bytes.
#pragma once

#include <string>
#include <utility>
#include <vector>

#include "sim/replay.h"

namespace gpupool {

struct Series {
  std::string name;
  std::string color;  // e.g. "#1f77b4"
  std::vector<std::pair<double, double>> points;
};

struct PlotSpec {
  std::string title, x_label, y_label;
  double x_min = 0, x_max = 1, y_min = 0, y_max = 1;
  bool legend_low = false;  // legend in the lower right instead of the upper right
};

// One panel of width x height pixels, origin at (x0, y0) in the document.
std::string LinePlot(const PlotSpec& spec, const std::vector<Series>& series, int x0, int y0,
                     int width, int height);
std::string SvgDocument(int width, int height, const std::string& body);

// Utilisation and queue length over time (days).
std::string ReplaySvg(const ReplayReport& r);

}  // namespace gpupool
