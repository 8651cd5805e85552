#include "views/plot_legend.h"

#include <qcustomplot.h>

#include <algorithm>

namespace hone::views {

void placeLegendBelow(QCustomPlot* plot, int row, int columns)
{
    plot->legend->setVisible(true);
    QFont legendFont = plot->font();
    legendFont.setPointSizeF(std::max(7.0, legendFont.pointSizeF() - 1));
    plot->legend->setFont(legendFont);
    plot->axisRect()->insetLayout()->take(plot->legend);
    plot->plotLayout()->addElement(row, 0, plot->legend);
    plot->legend->setFillOrder(QCPLegend::foColumnsFirst);
    if (columns > 0)
        plot->legend->setWrap(columns);
    plot->legend->setBorderPen(Qt::NoPen);
    plot->plotLayout()->setRowStretchFactor(row, 0.001);
}

} // namespace hone::views
