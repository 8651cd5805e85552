#!/usr/bin/env python3
"""Renders hone.svg into the committed hone-SIZE.png files (the hicolor sizes the package
installs). Reads only the SVG subset hone.svg uses: rect with rx, circle, path of M/L lines.
Run after editing hone.svg: /usr/bin/python3 packaging/icons/render.py (needs python3-pil)."""
import os
import re
import xml.etree.ElementTree as ET

from PIL import Image, ImageDraw

HERE = os.path.dirname(os.path.abspath(__file__))
NS = "{http://www.w3.org/2000/svg}"
SUPER = 8  # supersampling for smooth edges


def colour(text):
    text = text.lstrip("#")
    return tuple(int(text[i:i + 2], 16) for i in (0, 2, 4)) + (255,)


def render(size):
    root = ET.parse(os.path.join(HERE, "hone.svg")).getroot()
    vb = [float(v) for v in root.get("viewBox").split()]
    k = size * SUPER / vb[2]
    img = Image.new("RGBA", (size * SUPER, size * SUPER), (0, 0, 0, 0))
    draw = ImageDraw.Draw(img)

    def walk(node, inherited):
        style = dict(inherited)
        for key in ("stroke", "stroke-width", "fill"):
            if node.get(key) is not None:
                style[key] = node.get(key)
        tag = node.tag.replace(NS, "")
        if tag == "rect":
            x, y, w, h, rx = (float(node.get(a, 0)) * k for a in ("x", "y", "width", "height", "rx"))
            draw.rounded_rectangle([x, y, x + w, y + h], radius=rx, fill=colour(style["fill"]))
        elif tag == "circle":
            cx, cy, r = (float(node.get(a)) * k for a in ("cx", "cy", "r"))
            draw.ellipse([cx - r, cy - r, cx + r, cy + r], fill=colour(style["fill"]))
        elif tag == "path":
            width = float(style["stroke-width"]) * k
            points = []
            for op, x, y in re.findall(r"([ML])\s*([\d.]+)\s+([\d.]+)", node.get("d")):
                if op == "M" and len(points) > 1:
                    draw.line(points, fill=colour(style["stroke"]), width=round(width), joint="curve")
                if op == "M":
                    points = []
                points.append((float(x) * k, float(y) * k))
            if len(points) > 1:
                draw.line(points, fill=colour(style["stroke"]), width=round(width), joint="curve")
            # round caps
            for (px, py) in re.findall(r"[ML]\s*([\d.]+)\s+([\d.]+)", node.get("d")):
                px, py, r = float(px) * k, float(py) * k, width / 2
                draw.ellipse([px - r, py - r, px + r, py + r], fill=colour(style["stroke"]))
        for child in node:
            walk(child, style)

    walk(root, {})
    return img.resize((size, size), Image.LANCZOS)


if __name__ == "__main__":
    for size in (16, 32, 48, 64, 128, 256):
        render(size).save(os.path.join(HERE, "hone-%d.png" % size), optimize=True)
