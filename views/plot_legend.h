#pragma once

class QCustomPlot;

namespace hone::views {

/// Moves `plot`'s legend out of its axis rect into a row of its own under the axes (the plot
/// layout's row `row`, column 0), entries side by side in a smaller font: inside the axes a
/// legend covers data (issue 23). `columns` > 0 wraps the entries after that many, so that a
/// narrow dock need not be as wide as every entry side by side.
void placeLegendBelow(QCustomPlot* plot, int row, int columns = 0);

} // namespace hone::views
