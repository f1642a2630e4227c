// What the arrows mean, said on screen: the two views draw their edges in opposite senses.

/** The legend of a view ("forward" or "backward"). */
export function legendText(view) {
  if (view === "forward") return "Arrows: data flow, from inputs through each op to its result (the loss at the bottom).";
  return "Arrows: from the loss towards the leaves, as next_functions point; backward() sends gradients this way.";
}
