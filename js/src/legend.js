// What the arrows mean, said on screen: the two views draw their edges in opposite senses.

/** The legend of a view ("forward" or "backward"). */
export function legendText(view) {
  if (view === "forward") return "Arrows follow the data: from inputs through each op to its result, down to the loss.";
  return "Arrows follow next_functions: from the loss down to the leaves, the way backward() sends gradients.";
}
